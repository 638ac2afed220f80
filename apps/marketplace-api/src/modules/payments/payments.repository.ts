import { and, count, desc, eq, gte, inArray, lt, or, sql, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import {
  appointments,
  PAID_PAYMENT_STATUSES,
  PAYMENT_STATUSES,
  paymentTransfers,
  paymentWebhookEvents,
  payments,
  platformSettings,
  type Payment,
  type PaymentStatus,
} from '../../db/schema/index.js';
import { defineStateMachine } from '../../lib/transitions.js';

/** What a payment's changes may set besides its state, which only `paymentMachine` moves. */
type PaymentPatch = Partial<Omit<typeof payments.$inferInsert, 'id' | 'status'>>;

/** What the activity log and the outbox keep of a payment. */
export function paymentAudit(p: Payment) {
  return {
    id: p.id,
    appointment_id: p.appointmentId,
    status: p.status,
    amount_cents: p.amountCents,
    commission_cents: p.commissionCents,
    refunded_cents: p.refundedCents,
    hold_reason: p.holdReason,
    dispute_status: p.disputeStatus,
  };
}

/**
 * A payment's life (DESIGN.md §6), moved by `transition`: `requires_payment` → `processing` →
 * `succeeded` | `failed` (a declined card may be paid again), `succeeded` → `partially_refunded` →
 * `refunded`. The processor makes the moves (its webhooks, a re-read, a refund's answer); each is
 * logged and published as `payment.<state>`, the events the notifications and real-time read.
 */
export const paymentMachine = defineStateMachine({
  table: payments,
  key: payments.id,
  state: payments.status,
  states: PAYMENT_STATUSES,
  label: 'Payment',
  noun: 'payment',
  stateName: 'status',
  subjectType: 'payment',
  audit: paymentAudit,
  stamp: () => ({ updatedAt: sql`now()` }),
});

// ---- appointments -------------------------------------------------------------------------------

/** The appointment a payment is for, locked so that two initiations of it run one after the other. */
export async function lockAppointment(db: DbTx, id: number) {
  const [row] = await db.select().from(appointments).where(eq(appointments.id, id)).for('update');
  return row;
}

export async function findAppointment(db: DbTx, id: number) {
  const [row] = await db.select().from(appointments).where(eq(appointments.id, id));
  return row;
}

export async function setAppointmentPaidAt(db: DbTx, id: number, paidAt: Date): Promise<void> {
  await db
    .update(appointments)
    .set({ paidAt, updatedAt: sql`now()` })
    .where(and(eq(appointments.id, id), sql`${appointments.paidAt} is null`));
}

// ---- payments -----------------------------------------------------------------------------------

export async function insertPayment(db: DbTx, values: typeof payments.$inferInsert): Promise<Payment> {
  const [row] = await db.insert(payments).values(values).returning();
  return row!;
}

export async function findPayment(db: DbTx, id: number, opts: { lock?: boolean } = {}): Promise<Payment | undefined> {
  const q = db.select().from(payments).where(eq(payments.id, id));
  const [row] = opts.lock ? await q.for('update') : await q;
  return row;
}

export async function findPaymentByAppointment(db: DbTx, appointmentId: number, opts: { lock?: boolean } = {}): Promise<Payment | undefined> {
  const q = db.select().from(payments).where(eq(payments.appointmentId, appointmentId));
  const [row] = opts.lock ? await q.for('update') : await q;
  return row;
}

/** The payment of a processor object: by its intent, else by its charge. */
export async function findPaymentByProcessorRef(
  db: DbTx,
  processor: string,
  ref: { intentId?: string | null; chargeId?: string | null },
): Promise<Payment | undefined> {
  const conditions: SQL[] = [];
  if (ref.intentId) conditions.push(eq(payments.intentId, ref.intentId));
  if (ref.chargeId) conditions.push(eq(payments.chargeId, ref.chargeId));
  if (conditions.length === 0) return undefined;
  const [row] = await db
    .select()
    .from(payments)
    .where(and(eq(payments.processor, processor), or(...conditions)))
    .for('update');
  return row;
}

/** Changes what is not the payment's state (its amount, charge, dispute, hold); its state moves through `paymentMachine`. */
export async function updatePayment(db: DbTx, id: number, patch: PaymentPatch): Promise<Payment> {
  const [row] = await db
    .update(payments)
    .set({ ...patch, updatedAt: sql`now()` })
    .where(eq(payments.id, id))
    .returning();
  return row!;
}

/** Stores an event id; false when it was already there (a redelivery, applied already). */
export async function rememberWebhookEvent(db: DbTx, eventId: string, type: string): Promise<boolean> {
  const rows = await db.insert(paymentWebhookEvents).values({ eventId, type }).onConflictDoNothing().returning({ id: paymentWebhookEvents.eventId });
  return rows.length > 0;
}

// ---- commission settings ------------------------------------------------------------------------

const COMMISSION_KEY = 'commission';

export async function readCommissionSettings(db: DbTx): Promise<unknown> {
  const [row] = await db.select({ value: platformSettings.value }).from(platformSettings).where(eq(platformSettings.key, COMMISSION_KEY));
  return row?.value;
}

export async function writeCommissionSettings(db: DbTx, value: Record<string, number>, updatedBy: number): Promise<void> {
  await db
    .insert(platformSettings)
    .values({ key: COMMISSION_KEY, value, updatedBy })
    .onConflictDoUpdate({ target: platformSettings.key, set: { value, updatedBy, updatedAt: sql`now()` } });
}

/** Serialises changes of the commission settings (the row may not exist yet). */
export async function lockCommissionSettings(db: DbTx): Promise<void> {
  await db.execute(sql`select pg_advisory_xact_lock(hashtext('payments.commission_settings'))`);
}

// ---- lists and figures --------------------------------------------------------------------------

export interface PaymentFilters {
  status?: PaymentStatus;
  /** Payments where this user is the client or the prestataire. */
  partyId?: number;
  clientId?: number;
  prestataireId?: number;
  from?: Date;
  to?: Date;
}

function paymentWhere(f: PaymentFilters) {
  return and(
    f.status === undefined ? undefined : eq(payments.status, f.status),
    f.partyId === undefined ? undefined : or(eq(payments.clientId, f.partyId), eq(payments.prestataireId, f.partyId)),
    f.clientId === undefined ? undefined : eq(payments.clientId, f.clientId),
    f.prestataireId === undefined ? undefined : eq(payments.prestataireId, f.prestataireId),
    f.from === undefined ? undefined : gte(payments.createdAt, f.from),
    f.to === undefined ? undefined : lt(payments.createdAt, f.to),
  );
}

export async function listPayments(db: DbTx, filters: PaymentFilters, limit: number, offset: number) {
  const where = paymentWhere(filters);
  const [rows, [total]] = await Promise.all([
    db.select().from(payments).where(where).orderBy(desc(payments.createdAt), desc(payments.id)).limit(limit).offset(offset),
    db.select({ n: count() }).from(payments).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}

/**
 * Volume, commission and refunds of the paid payments, by day or month of their payment in the
 * platform's time zone.
 */
export async function paymentStats(db: DbTx, opts: { zone: string; unit: 'day' | 'month'; from?: Date; to?: Date }) {
  const period = sql<string>`to_char(date_trunc(${opts.unit}, ${payments.paidAt} at time zone ${opts.zone}), ${opts.unit === 'day' ? 'YYYY-MM-DD' : 'YYYY-MM'})`;
  const where = and(
    inArray(payments.status, [...PAID_PAYMENT_STATUSES]),
    opts.from === undefined ? undefined : gte(payments.paidAt, opts.from),
    opts.to === undefined ? undefined : lt(payments.paidAt, opts.to),
  );
  const rows = await db
    .select({
      period,
      count: count(),
      volume: sql<string>`coalesce(sum(${payments.amountCents}), 0)`,
      commission: sql<string>`coalesce(sum(${payments.commissionCents}), 0)`,
      refunds: sql<string>`coalesce(sum(${payments.refundedCents}), 0)`,
    })
    .from(payments)
    .where(where)
    // By position: the period's expression carries parameters, which PostgreSQL would not match
    // between the select list and a repeated GROUP BY expression.
    .groupBy(sql`1`)
    .orderBy(sql`1`);
  return rows.map((r) => ({ period: r.period, count: Number(r.count), volume: Number(r.volume), commission: Number(r.commission), refunds: Number(r.refunds) }));
}

/** A prestataire's paid payments with their transfer, for its revenue. */
export async function paidPaymentsOf(db: DbTx, prestataireId: number) {
  return db
    .select({ payment: payments, transfer: paymentTransfers })
    .from(payments)
    .leftJoin(paymentTransfers, eq(paymentTransfers.paymentId, payments.id))
    .where(and(eq(payments.prestataireId, prestataireId), inArray(payments.status, [...PAID_PAYMENT_STATUSES])))
    .orderBy(payments.paidAt);
}
