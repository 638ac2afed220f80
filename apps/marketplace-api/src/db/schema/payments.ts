import { sql } from 'drizzle-orm';
import { boolean, check, index, integer, jsonb, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { timestamps } from './columns.js';
import { appointments } from './lifecycle.js';
import { users } from './users.js';
import { marketplaceSchema } from './pg-schema.js';

export const PAYMENT_STATUSES = ['requires_payment', 'processing', 'succeeded', 'failed', 'refunded', 'partially_refunded'] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];
/** The states in which the platform holds the client's money (a charge that went through). */
export const PAID_PAYMENT_STATUSES = ['succeeded', 'partially_refunded', 'refunded'] as const;

export const TRANSFER_STATUSES = ['held', 'paid', 'partially_reversed', 'reversed'] as const;
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
    check('payment_transfers_status_valid', sql`${t.status} in ('held', 'paid', 'partially_reversed', 'reversed')`),
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
    payoutId: text('payout_id').notNull(),
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

export type Payment = typeof payments.$inferSelect;
export type PaymentTransfer = typeof paymentTransfers.$inferSelect;
export type ConnectedAccount = typeof connectedAccounts.$inferSelect;
export type Payout = typeof payouts.$inferSelect;
export type Invoice = typeof invoices.$inferSelect;
