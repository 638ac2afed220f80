import { id, iso, paginationMeta, paginationQuery, storableText, timestamp, UNSTORABLE_TEXT_MESSAGE } from '@repo/schemas';
import { z } from 'zod';
import {
  MONEY_MOVE_KINDS,
  MONEY_MOVE_STATUSES,
  PAYMENT_STATUSES,
  PAYOUT_STATUSES,
  type ConnectedAccount,
  type LedgerEntry,
  type MoneyMove,
  type Payment,
  type Payout,
  type ReconciliationItem,
} from '../../db/schema/index.js';
import { isCalendarDate } from '../../lib/time.js';
import type { CommissionSettings } from './commission.js';

export const AppointmentPaymentParams = z.object({ appointment: id });
export const PaymentParams = z.object({ payment: id });

export const PaymentResponse = z.object({
  id: z.number().int(),
  appointment_id: z.number().int(),
  client_id: z.number().int(),
  prestataire_id: z.number().int(),
  amount_cents: z.number().int(),
  commission_cents: z.number().int().describe('Fixed from the commission settings when the charge succeeds'),
  refunded_cents: z.number().int(),
  currency: z.string(),
  status: z.enum(PAYMENT_STATUSES),
  processor: z.string(),
  failure_reason: z.string().nullable(),
  paid_at: timestamp.nullable(),
  refunded_at: timestamp.nullable(),
  dispute_status: z.string().nullable(),
  transfer_on_hold: z.boolean(),
  hold_reason: z.string().nullable(),
  created_at: timestamp,
  updated_at: timestamp,
});
export type PaymentResponse = z.infer<typeof PaymentResponse>;

export function presentPayment(p: Payment): PaymentResponse {
  return {
    id: p.id,
    appointment_id: p.appointmentId,
    client_id: p.clientId,
    prestataire_id: p.prestataireId,
    amount_cents: p.amountCents,
    commission_cents: p.commissionCents,
    refunded_cents: p.refundedCents,
    currency: p.currency,
    status: p.status,
    processor: p.processor,
    failure_reason: p.failureReason,
    paid_at: iso(p.paidAt),
    refunded_at: iso(p.refundedAt),
    dispute_status: p.disputeStatus,
    transfer_on_hold: p.holdReason !== null,
    hold_reason: p.holdReason,
    created_at: iso(p.createdAt),
    updated_at: iso(p.updatedAt),
  };
}

export const InitiateResponse = z.object({ payment: PaymentResponse, client_secret: z.string() });

export const ValidateBody = z
  .object({
    simulate: z
      .enum(['succeeded', 'failed'])
      .optional()
      .describe('Built-in processor only: settles the payment as the card confirmation would (422 with Stripe)'),
  })
  .optional();

export const WebhookResponse = z.object({ received: z.literal(true), id: z.string(), type: z.string(), applied: z.boolean() });

// ---- commission settings -------------------------------------------------------------------------

export const CommissionSettingsBody = z.object({
  percentage: z
    .number()
    .min(0)
    .max(100)
    .refine((v) => Number.isInteger(Math.round(v * 100)) && Math.abs(Math.round(v * 100) - v * 100) < 1e-6, 'At most two decimals')
    .describe('Percentage of the price, up to two decimals (12.5)'),
  fixed_cents: z.number().int().min(0).max(1_000_000),
  minimum_cents: z.number().int().min(0).max(1_000_000),
});

export const CommissionSettingsResponse = z.object({ percentage: z.number(), fixed_cents: z.number().int(), minimum_cents: z.number().int() });

export function presentCommission(s: CommissionSettings): z.infer<typeof CommissionSettingsResponse> {
  return { percentage: s.percentBasisPoints / 100, fixed_cents: s.fixedCents, minimum_cents: s.minimumCents };
}

export function commissionFromBody(b: z.infer<typeof CommissionSettingsBody>): CommissionSettings {
  return { percentBasisPoints: Math.round(b.percentage * 100), fixedCents: b.fixed_cents, minimumCents: b.minimum_cents };
}

// ---- administration ------------------------------------------------------------------------------

export const RefundBody = z.object({
  amount_cents: z.number().int().min(1).max(100_000_000).optional().describe('Default: all that is not yet refunded'),
  reason: z.string().trim().min(1).max(1000).refine(storableText, UNSTORABLE_TEXT_MESSAGE),
});

const bound = z
  .string()
  .max(40)
  .refine((v) => isCalendarDate(v) || z.iso.datetime({ offset: true }).safeParse(v).success, 'Must be a date (YYYY-MM-DD) or an ISO 8601 instant')
  .describe('A date (YYYY-MM-DD, the platform time zone: `to` includes the whole day) or an ISO 8601 instant');

export const AdminPaymentsQuery = paginationQuery({ defaultPerPage: 20, maxPerPage: 100 }).extend({
  status: z.enum(PAYMENT_STATUSES).optional(),
  user_id: id.optional().describe('Payments where this user is the client or the prestataire'),
  client_id: id.optional(),
  prestataire_id: id.optional(),
  from: bound.optional(),
  to: bound.optional(),
});

export const StatsQuery = z.object({
  group_by: z.enum(['day', 'month']).default('day'),
  from: bound.optional(),
  to: bound.optional(),
});

const Figures = {
  count: z.number().int(),
  volume_cents: z.number().int(),
  commission_cents: z.number().int(),
  refunds_cents: z.number().int(),
};
export const StatsResponse = z.object({
  currency: z.string(),
  time_zone: z.string(),
  group_by: z.enum(['day', 'month']),
  periods: z.array(z.object({ period: z.string(), ...Figures })),
  totals: z.object(Figures),
});

export function presentFigures(f: { count: number; volume: number; commission: number; refunds: number }) {
  return { count: f.count, volume_cents: f.volume, commission_cents: f.commission, refunds_cents: f.refunds };
}

// ---- the parties ---------------------------------------------------------------------------------

export const HistoryQuery = paginationQuery({ defaultPerPage: 20, maxPerPage: 100 }).extend({ status: z.enum(PAYMENT_STATUSES).optional() });

export const AccountStatusResponse = z.object({
  onboarded: z.boolean().describe('A connected account exists'),
  account_id: z.string().nullable(),
  charges_enabled: z.boolean(),
  payouts_enabled: z.boolean(),
  details_submitted: z.boolean(),
  transfers_enabled: z.boolean().describe('The account can receive transfers: held shares go out once it can'),
  requirements: z.array(z.string()).describe('What the processor still needs (`currently_due`)'),
  iban_last4: z.string().nullable(),
});

export function presentAccount(a: ConnectedAccount | null): z.infer<typeof AccountStatusResponse> {
  return {
    onboarded: a !== null,
    account_id: a?.accountId ?? null,
    charges_enabled: a?.chargesEnabled ?? false,
    payouts_enabled: a?.payoutsEnabled ?? false,
    details_submitted: a?.detailsSubmitted ?? false,
    transfers_enabled: a?.transfersEnabled ?? false,
    requirements: a?.requirements ?? [],
    iban_last4: a?.ibanLast4 ?? null,
  };
}

export const OnboardResponse = z.object({ account: AccountStatusResponse, url: z.string(), expires_at: timestamp });

export const IbanBody = z.object({
  iban: z
    .string()
    .trim()
    .min(1)
    .max(50)
    .refine(storableText, UNSTORABLE_TEXT_MESSAGE)
    .describe('Spaces allowed; checked with mod 97 (422 otherwise)'),
  account_holder_name: z.string().trim().min(1).max(200).refine(storableText, UNSTORABLE_TEXT_MESSAGE).optional(),
});

export const PayoutResponse = z.object({
  id: z.number().int(),
  amount_cents: z.number().int(),
  currency: z.string(),
  status: z.enum(PAYOUT_STATUSES),
  failure_reason: z.string().nullable(),
  created_at: timestamp,
  updated_at: timestamp,
});

export function presentPayout(p: Payout): z.infer<typeof PayoutResponse> {
  return {
    id: p.id,
    amount_cents: p.amountCents,
    currency: p.currency,
    status: p.status,
    failure_reason: p.failureReason,
    created_at: iso(p.createdAt),
    updated_at: iso(p.updatedAt),
  };
}

export const RevenueResponse = z.object({
  currency: z.string(),
  gross_cents: z.number().int().describe('Paid by clients, less refunds'),
  commission_cents: z.number().int(),
  net_cents: z.number().int().describe('Your share: gross less commission'),
  transferred_cents: z.number().int().describe('Sent to your connected account'),
  paid_out_cents: z.number().int().describe('Paid out to your bank account'),
  pending_cents: z.number().int().describe('Earned but not yet in your bank: held shares and the balance not paid out'),
  pending_payouts_cents: z.number().int(),
  by_month: z.array(z.object({ month: z.string(), gross_cents: z.number().int(), commission_cents: z.number().int(), net_cents: z.number().int() })),
  payouts: z.array(PayoutResponse),
});

/** A money move: one call (with its retries) the processor makes for the platform (DESIGN.md §11). */
export const MoneyMoveResponse = z.object({
  id: z.number().int(),
  kind: z.enum(MONEY_MOVE_KINDS),
  status: z.enum(MONEY_MOVE_STATUSES).describe('`pending`, `executing` and `retrying` are on their way; the worker finishes them'),
  payment_id: z.number().int().nullable(),
  prestataire_id: z.number().int().nullable(),
  amount_cents: z.number().int(),
  currency: z.string(),
  reason: z.string().nullable(),
  attempt: z.number().int().describe('A refused move tried again (when the refusal can change) is its next attempt, with a new key'),
  tries: z.number().int(),
  processor_id: z.string().nullable(),
  failure_code: z.string().nullable(),
  failure_reason: z.string().nullable(),
  next_attempt_at: timestamp,
  created_at: timestamp,
  finished_at: timestamp.nullable(),
});

export function presentMove(m: MoneyMove): z.infer<typeof MoneyMoveResponse> {
  return {
    id: m.id,
    kind: m.kind,
    status: m.status,
    payment_id: m.paymentId,
    prestataire_id: m.prestataireId,
    amount_cents: m.amountCents,
    currency: m.currency,
    reason: m.reason,
    attempt: m.attempt,
    tries: m.tries,
    processor_id: m.processorId,
    failure_code: m.failureCode,
    failure_reason: m.failureReason,
    next_attempt_at: iso(m.nextAttemptAt),
    created_at: iso(m.createdAt),
    finished_at: iso(m.finishedAt),
  };
}

export const RefundResponse = PaymentResponse.extend({ refund: MoneyMoveResponse });

export const LedgerQuery = paginationQuery({ defaultPerPage: 50, maxPerPage: 500 }).extend({
  payment_id: id.optional(),
  prestataire_id: id.optional(),
});

export const LedgerEntryResponse = z.object({
  id: z.number().int(),
  transaction_id: z.string().describe('The movement; the entries of one transaction sum to zero'),
  kind: z.string(),
  account: z.string(),
  amount_cents: z.number().int(),
  currency: z.string(),
  payment_id: z.number().int().nullable(),
  prestataire_id: z.number().int().nullable(),
  move_id: z.number().int().nullable(),
  created_at: timestamp,
});

export function presentEntry(e: LedgerEntry): z.infer<typeof LedgerEntryResponse> {
  return {
    id: e.id,
    transaction_id: e.transactionId,
    kind: e.kind,
    account: e.account,
    amount_cents: e.amountCents,
    currency: e.currency,
    payment_id: e.paymentId,
    prestataire_id: e.prestataireId,
    move_id: e.moveId,
    created_at: iso(e.createdAt),
  };
}

export const LedgerMeta = paginationMeta.extend({
  totals: z.record(z.string(), z.number().int()).describe('The balance of each account over every entry the filters select (not only this page)'),
});

export const ReconciliationQuery = paginationQuery({ defaultPerPage: 50, maxPerPage: 200 });

const Difference = z.object({
  key: z.string().describe('What differs and where, e.g. `payment:12:refunds`'),
  kind: z.string().describe('charge, ledger_refunds, intent, refunds, transfers, reversals, stranded_share, payouts, unbalanced'),
  payment_id: z.number().int().nullable(),
  prestataire_id: z.number().int().nullable(),
  expected_cents: z.number().int().nullable().describe("The ledger's figure"),
  actual_cents: z.number().int().nullable().describe("The processor's figure"),
  detail: z.string(),
});

export const ReconciliationItemResponse = Difference.extend({ id: z.number().int(), first_seen_at: timestamp, last_seen_at: timestamp });

export function presentReconciliationItem(r: ReconciliationItem): z.infer<typeof ReconciliationItemResponse> {
  return {
    id: r.id,
    key: r.key,
    kind: r.kind,
    payment_id: r.paymentId,
    prestataire_id: r.prestataireId,
    expected_cents: r.expectedCents,
    actual_cents: r.actualCents,
    detail: r.detail,
    first_seen_at: iso(r.firstSeenAt),
    last_seen_at: iso(r.lastSeenAt),
  };
}

export const ReconciliationReportResponse = z.object({
  ran_at: timestamp,
  payments_checked: z.number().int(),
  accounts_checked: z.number().int(),
  unreachable: z.number().int().describe('Objects the processor could not be asked about (checked again next run)'),
  open: z.number().int().describe('Differences open after this run'),
  differences: z.array(Difference),
});
