import { sql } from 'drizzle-orm';
import { boolean, check, index, integer, jsonb, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { timestamps } from './columns.js';
import { appointments } from './booking.js';
import { users } from './users.js';
import { marketplaceSchema } from './pg-schema.js';

export const PAYMENT_STATUSES = ['requires_payment', 'processing', 'succeeded', 'failed', 'refunded', 'partially_refunded'] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];
/** The states in which the platform holds the client's money (a charge that went through). */
export const PAID_PAYMENT_STATUSES = ['succeeded', 'partially_refunded', 'refunded'] as const;

/** `sending`: released, its transfer being made at the processor (a money move in flight). */
export const TRANSFER_STATUSES = ['held', 'sending', 'paid', 'partially_reversed', 'reversed'] as const;
export type TransferStatus = (typeof TRANSFER_STATUSES)[number];

export const PAYOUT_STATUSES = ['pending', 'paid', 'failed'] as const;
export type PayoutStatus = (typeof PAYOUT_STATUSES)[number];

/**
 * The client's payment of an appointment's final price (DESIGN.md §6): one per appointment, amounts
 * in integer cents. `commission_cents` is fixed from the commission settings when the charge
 * succeeds; until then it shows what the current settings would take.
 */
export const payments = marketplaceSchema.table(
  'payments',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    appointmentId: integer('appointment_id')
      .notNull()
      .references(() => appointments.id, { onDelete: 'restrict' }),
    clientId: integer('client_id')
      .notNull()
      .references(() => users.id, { onDelete: 'restrict' }),
    prestataireId: integer('prestataire_id')
      .notNull()
      .references(() => users.id, { onDelete: 'restrict' }),
    amountCents: integer('amount_cents').notNull(),
    commissionCents: integer('commission_cents').notNull().default(0),
    refundedCents: integer('refunded_cents').notNull().default(0),
    currency: text('currency').notNull().default('EUR'),
    status: text('status').$type<PaymentStatus>().notNull().default('requires_payment'),
    /** `stripe` or `builtin`: which processor holds the intent. */
    processor: text('processor').notNull(),
    intentId: text('intent_id').notNull(),
    clientSecret: text('client_secret').notNull(),
    chargeId: text('charge_id'),
    failureReason: text('failure_reason'),
    paidAt: timestamp('paid_at', { withTimezone: true }),
    refundedAt: timestamp('refunded_at', { withTimezone: true }),
    /** `open` while the card holder disputes the charge (Stripe `charge.dispute.*`). */
    disputeStatus: text('dispute_status'),
    /** Why the prestataire's transfer waits (a dispute, a conversation in dispute); null: free to go. */
    holdReason: text('hold_reason'),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('payments_appointment_unique').on(t.appointmentId),
    uniqueIndex('payments_intent_unique').on(t.processor, t.intentId),
    index('payments_client_idx').on(t.clientId, t.createdAt.desc()),
    index('payments_prestataire_idx').on(t.prestataireId, t.createdAt.desc()),
    index('payments_status_idx').on(t.status, t.createdAt),
    index('payments_charge_idx').on(t.chargeId),
    // Revenue by the day the charge went through (statistics, the admin dashboard), refunds by theirs.
    index('payments_paid_idx').on(t.paidAt).where(sql`${t.paidAt} is not null`),
    index('payments_refunded_idx').on(t.refundedAt).where(sql`${t.refundedAt} is not null`),
    check('payments_status_valid', sql`${t.status} in ('requires_payment', 'processing', 'succeeded', 'failed', 'refunded', 'partially_refunded')`),
    check('payments_amounts_valid', sql`${t.amountCents} > 0 and ${t.commissionCents} between 0 and ${t.amountCents} and ${t.refundedCents} between 0 and ${t.amountCents}`),
  ],
);

/** Each processor event by its id: a delivery already here is not applied again. */
export const paymentWebhookEvents = marketplaceSchema.table('payment_webhook_events', {
  eventId: text('event_id').primaryKey(),
  type: text('type').notNull(),
  receivedAt: timestamp('received_at', { withTimezone: true }).notNull().defaultNow(),
});

/** A prestataire's connected account at the processor (Stripe Connect Express). */
export const connectedAccounts = marketplaceSchema.table(
  'connected_accounts',
  {
    prestataireId: integer('prestataire_id')
      .primaryKey()
      .references(() => users.id, { onDelete: 'restrict' }),
    accountId: text('account_id').notNull(),
    chargesEnabled: boolean('charges_enabled').notNull().default(false),
    payoutsEnabled: boolean('payouts_enabled').notNull().default(false),
    detailsSubmitted: boolean('details_submitted').notNull().default(false),
    /** Whether the account may receive transfers (Stripe's `transfers` capability active): held shares wait for it. */
    transfersEnabled: boolean('transfers_enabled').notNull().default(false),
    /** The processor's outstanding requirements (`currently_due`). */
    requirements: jsonb('requirements').$type<string[]>().notNull().default([]),
    bankAccountId: text('bank_account_id'),
    ibanLast4: text('iban_last4'),
    ...timestamps,
  },
  (t) => [uniqueIndex('connected_accounts_account_unique').on(t.accountId)],
);

/** The prestataire's share of a payment, sent to its connected account (`transfer_group` = the appointment). */
export const paymentTransfers = marketplaceSchema.table(
  'payment_transfers',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    paymentId: integer('payment_id')
      .notNull()
      .references(() => payments.id, { onDelete: 'restrict' }),
    appointmentId: integer('appointment_id').notNull(),
    prestataireId: integer('prestataire_id').notNull(),
    amountCents: integer('amount_cents').notNull(),
    reversedCents: integer('reversed_cents').notNull().default(0),
    transferGroup: text('transfer_group').notNull(),
    transferId: text('transfer_id'),
    status: text('status').$type<TransferStatus>().notNull(),
    holdReason: text('hold_reason'),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('payment_transfers_payment_unique').on(t.paymentId),
    index('payment_transfers_prestataire_idx').on(t.prestataireId, t.createdAt),
    check('payment_transfers_status_valid', sql`${t.status} in ('held', 'sending', 'paid', 'partially_reversed', 'reversed')`),
    check('payment_transfers_amounts_valid', sql`${t.amountCents} >= 0 and ${t.reversedCents} between 0 and ${t.amountCents}`),
  ],
);

/** A withdrawal of a prestataire's available balance to its bank account (manual payouts). */
export const payouts = marketplaceSchema.table(
  'payouts',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    prestataireId: integer('prestataire_id')
      .notNull()
      .references(() => users.id, { onDelete: 'restrict' }),
    accountId: text('account_id').notNull(),
    /** The processor's payout, once the money move that creates it has its answer. */
    payoutId: text('payout_id'),
    /** The money move that asks the processor for this payout. */
    moveId: integer('move_id'),
    amountCents: integer('amount_cents').notNull(),
    currency: text('currency').notNull().default('EUR'),
    status: text('status').$type<PayoutStatus>().notNull().default('pending'),
    failureReason: text('failure_reason'),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('payouts_payout_unique').on(t.payoutId),
    index('payouts_prestataire_idx').on(t.prestataireId, t.createdAt.desc()),
    check('payouts_status_valid', sql`${t.status} in ('pending', 'paid', 'failed')`),
    check('payouts_amount_positive', sql`${t.amountCents} > 0`),
  ],
);

/**
 * The invoice of a paid payment. Numbers run without gaps within a year (`2026-000001`): taken from
 * `invoice_counters` in the transaction that issues the invoice, so a rolled-back issue gives its
 * number back (a sequence would lose it).
 */
export const invoices = marketplaceSchema.table(
  'invoices',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    paymentId: integer('payment_id')
      .notNull()
      .references(() => payments.id, { onDelete: 'restrict' }),
    year: integer('year').notNull(),
    sequence: integer('sequence').notNull(),
    number: text('number').notNull(),
    issuedAt: timestamp('issued_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('invoices_payment_unique').on(t.paymentId),
    uniqueIndex('invoices_year_sequence_unique').on(t.year, t.sequence),
    uniqueIndex('invoices_number_unique').on(t.number),
  ],
);

/** The last invoice number given each year. */
export const invoiceCounters = marketplaceSchema.table('invoice_counters', {
  year: integer('year').primaryKey(),
  lastNumber: integer('last_number').notNull().default(0),
});

export const MONEY_MOVE_KINDS = ['refund', 'transfer', 'reversal', 'payout'] as const;
export type MoneyMoveKind = (typeof MONEY_MOVE_KINDS)[number];
export const MONEY_MOVE_STATUSES = ['pending', 'executing', 'retrying', 'succeeded', 'failed'] as const;
export type MoneyMoveStatus = (typeof MONEY_MOVE_STATUSES)[number];
/** The states of a move the processor has not answered for good yet. */
export const LIVE_MONEY_MOVE_STATUSES = ['pending', 'executing', 'retrying'] as const;

/**
 * One movement of money the processor makes for us (DESIGN.md §11), in atomic phases: the row is
 * committed first with the idempotency key of its attempt (`<kind>-<id>-<attempt>`), then the
 * processor is called with no transaction open, then a short transaction records the answer. A
 * move left `executing` past its lease (a crash, a lost answer) or `retrying` (the processor was
 * unavailable) is driven again by the worker with the same key, so the processor does it once; a
 * refusal that can change (an account not yet able to receive transfers) is tried again later as a
 * new attempt, with a new key.
 */
export const moneyMoves = marketplaceSchema.table(
  'money_moves',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    kind: text('kind').$type<MoneyMoveKind>().notNull(),
    status: text('status').$type<MoneyMoveStatus>().notNull().default('pending'),
    paymentId: integer('payment_id').references(() => payments.id, { onDelete: 'restrict' }),
    prestataireId: integer('prestataire_id').references(() => users.id, { onDelete: 'restrict' }),
    amountCents: integer('amount_cents').notNull(),
    currency: text('currency').notNull().default('EUR'),
    /** What the move acts on at the processor: the destination account, or the transfer reversed. */
    target: text('target'),
    /** Why the money moves (a refund's reason); shown to administrators, never sent with personal data. */
    reason: text('reason'),
    /** What asked for it, once: `dispute:<conversation id>`, `reversal:<refund move id>`, `processor:<refund id>`. */
    origin: text('origin'),
    attempt: integer('attempt').notNull().default(1),
    /** Calls made for the current attempt (each with the attempt's key). */
    tries: integer('tries').notNull().default(0),
    idempotencyKey: text('idempotency_key'),
    /** The processor's object once it answered (`re_…`, `tr_…`, `trr_…`, `po_…`). */
    processorId: text('processor_id'),
    failureCode: text('failure_code'),
    failureReason: text('failure_reason'),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }).notNull().defaultNow(),
    /** While `executing`: until when the instance calling the processor holds it. */
    leaseUntil: timestamp('lease_until', { withTimezone: true }),
    requestedBy: integer('requested_by'),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('money_moves_origin_unique').on(t.origin),
    uniqueIndex('money_moves_idempotency_key_unique').on(t.idempotencyKey),
    index('money_moves_payment_idx').on(t.paymentId, t.kind),
    index('money_moves_prestataire_idx').on(t.prestataireId, t.kind),
    index('money_moves_due_idx').on(t.nextAttemptAt).where(sql`${t.status} in ('pending', 'executing', 'retrying')`),
    check('money_moves_kind_valid', sql`${t.kind} in ('refund', 'transfer', 'reversal', 'payout')`),
    check('money_moves_status_valid', sql`${t.status} in ('pending', 'executing', 'retrying', 'succeeded', 'failed')`),
    check('money_moves_amount_positive', sql`${t.amountCents} > 0`),
  ],
);

/**
 * The double-entry ledger (DESIGN.md §11): every movement of money is a group of entries sharing a
 * `transaction_id` whose amounts sum to zero. Rows are only ever inserted; a balance is a sum. The
 * transaction id names the movement (`charge:<payment>`, `refund:<move>`…), so posting it twice
 * is a no-op (unique per account).
 */
export const ledgerEntries = marketplaceSchema.table(
  'ledger_entries',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    transactionId: text('transaction_id').notNull(),
    /** `client:<id>`, `platform:fees`, `refunds`, `prestataire:<id>:held|payable|paid_out`. */
    account: text('account').notNull(),
    amountCents: integer('amount_cents').notNull(),
    currency: text('currency').notNull().default('EUR'),
    paymentId: integer('payment_id').references(() => payments.id, { onDelete: 'restrict' }),
    prestataireId: integer('prestataire_id'),
    moveId: integer('move_id'),
    /** What the group records: charge, refund, transfer, reversal, payout, payout_failed. */
    kind: text('kind').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('ledger_entries_transaction_account_unique').on(t.transactionId, t.account),
    index('ledger_entries_payment_idx').on(t.paymentId),
    index('ledger_entries_prestataire_idx').on(t.prestataireId, t.account),
    index('ledger_entries_account_idx').on(t.account),
  ],
);

/** A difference the reconciliation found between the ledger and the processor, kept until a later run no longer finds it. */
export const reconciliationItems = marketplaceSchema.table(
  'reconciliation_items',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    /** What differs and where: `payment:<id>:refunds`, `prestataire:<id>:payouts`… one open item per key. */
    key: text('key').notNull(),
    kind: text('kind').notNull(),
    paymentId: integer('payment_id'),
    prestataireId: integer('prestataire_id'),
    expectedCents: integer('expected_cents'),
    actualCents: integer('actual_cents'),
    detail: text('detail').notNull(),
    firstSeenAt: timestamp('first_seen_at', { withTimezone: true }).notNull().defaultNow(),
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true }).notNull().defaultNow(),
    resolvedAt: timestamp('resolved_at', { withTimezone: true }),
  },
  (t) => [
    uniqueIndex('reconciliation_items_open_key_unique').on(t.key).where(sql`${t.resolvedAt} is null`),
    index('reconciliation_items_open_idx').on(t.lastSeenAt).where(sql`${t.resolvedAt} is null`),
  ],
);

export type Payment = typeof payments.$inferSelect;
export type MoneyMove = typeof moneyMoves.$inferSelect;
export type LedgerEntry = typeof ledgerEntries.$inferSelect;
export type ReconciliationItem = typeof reconciliationItems.$inferSelect;
export type PaymentTransfer = typeof paymentTransfers.$inferSelect;
export type ConnectedAccount = typeof connectedAccounts.$inferSelect;
export type Payout = typeof payouts.$inferSelect;
export type Invoice = typeof invoices.$inferSelect;
