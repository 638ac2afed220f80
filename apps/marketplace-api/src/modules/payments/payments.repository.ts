import { and, count, desc, eq, gte, inArray, lt, or, sql, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import {
  appointments,
  connectedAccounts,
  conversations,
  invoiceCounters,
  invoices,
  PAID_PAYMENT_STATUSES,
  paymentTransfers,
  paymentWebhookEvents,
  payments,
  payouts,
  platformSettings,
  prestataireProfiles,
  services,
  users,
  type ConnectedAccount,
  type Payment,
  type PaymentStatus,
  type PaymentTransfer,
  type Payout,
} from '../../db/schema/index.js';

type PaymentPatch = Partial<Omit<typeof payments.$inferInsert, 'id'>>;

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

export async function updatePayment(db: DbTx, id: number, patch: PaymentPatch): Promise<Payment> {
  const [row] = await db
    .update(payments)
    .set({ ...patch, updatedAt: sql`now()` })
    .where(eq(payments.id, id))
    .returning();
  return row!;
}

/** Moves a payment only from the given states (the conditional update of a state move). */
export async function movePayment(db: DbTx, id: number, from: readonly PaymentStatus[], patch: PaymentPatch): Promise<Payment | undefined> {
  const [row] = await db
    .update(payments)
    .set({ ...patch, updatedAt: sql`now()` })
    .where(and(eq(payments.id, id), inArray(payments.status, [...from])))
    .returning();
  return row;
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

// ---- connected accounts -------------------------------------------------------------------------

export async function findConnectedAccount(db: DbTx, prestataireId: number, opts: { lock?: boolean } = {}): Promise<ConnectedAccount | undefined> {
  const q = db.select().from(connectedAccounts).where(eq(connectedAccounts.prestataireId, prestataireId));
  const [row] = opts.lock ? await q.for('update') : await q;
  return row;
}

export async function findConnectedAccountById(db: DbTx, accountId: string): Promise<ConnectedAccount | undefined> {
  const [row] = await db.select().from(connectedAccounts).where(eq(connectedAccounts.accountId, accountId)).for('update');
  return row;
}

export async function insertConnectedAccount(db: DbTx, values: typeof connectedAccounts.$inferInsert): Promise<ConnectedAccount> {
  const [row] = await db.insert(connectedAccounts).values(values).returning();
  return row!;
}

export async function updateConnectedAccount(
  db: DbTx,
  prestataireId: number,
  patch: Partial<Omit<typeof connectedAccounts.$inferInsert, 'prestataireId'>>,
): Promise<ConnectedAccount> {
  const [row] = await db
    .update(connectedAccounts)
    .set({ ...patch, updatedAt: sql`now()` })
    .where(eq(connectedAccounts.prestataireId, prestataireId))
    .returning();
  return row!;
}

/** Serialises onboarding of one prestataire (its account row may not exist yet). */
export async function lockOnboarding(db: DbTx, prestataireId: number): Promise<void> {
  await db.execute(sql`select pg_advisory_xact_lock(hashtext('payments.onboarding'), ${prestataireId})`);
}

// ---- transfers ----------------------------------------------------------------------------------

export async function findTransferByPayment(db: DbTx, paymentId: number): Promise<PaymentTransfer | undefined> {
  const [row] = await db.select().from(paymentTransfers).where(eq(paymentTransfers.paymentId, paymentId)).for('update');
  return row;
}

export async function findTransferByTransferId(db: DbTx, transferId: string): Promise<PaymentTransfer | undefined> {
  const [row] = await db.select().from(paymentTransfers).where(eq(paymentTransfers.transferId, transferId)).for('update');
  return row;
}

export async function heldTransfersOf(db: DbTx, prestataireId: number, reason: string): Promise<PaymentTransfer[]> {
  return db
    .select()
    .from(paymentTransfers)
    .where(and(eq(paymentTransfers.prestataireId, prestataireId), eq(paymentTransfers.status, 'held'), eq(paymentTransfers.holdReason, reason)))
    .for('update');
}

export async function upsertTransfer(db: DbTx, values: typeof paymentTransfers.$inferInsert): Promise<PaymentTransfer> {
  const { paymentId: _p, ...set } = values;
  const [row] = await db
    .insert(paymentTransfers)
    .values(values)
    .onConflictDoUpdate({ target: paymentTransfers.paymentId, set: { ...set, updatedAt: sql`now()` } })
    .returning();
  return row!;
}

export async function updateTransfer(db: DbTx, id: number, patch: Partial<typeof paymentTransfers.$inferInsert>): Promise<PaymentTransfer> {
  const [row] = await db
    .update(paymentTransfers)
    .set({ ...patch, updatedAt: sql`now()` })
    .where(eq(paymentTransfers.id, id))
    .returning();
  return row!;
}

// ---- payouts ------------------------------------------------------------------------------------

export async function insertPayout(db: DbTx, values: typeof payouts.$inferInsert): Promise<Payout> {
  const [row] = await db.insert(payouts).values(values).returning();
  return row!;
}

export async function findPayoutByMove(db: DbTx, moveId: number): Promise<Payout | undefined> {
  const [row] = await db.select().from(payouts).where(eq(payouts.moveId, moveId)).for('update');
  return row;
}

/** Prestataires whose shares wait for their account to receive transfers (the worker re-reads those accounts). */
export async function accountsWithWaitingShares(db: DbTx, reasons: string[]): Promise<{ prestataireId: number; accountId: string }[]> {
  return db
    .selectDistinct({ prestataireId: connectedAccounts.prestataireId, accountId: connectedAccounts.accountId })
    .from(paymentTransfers)
    .innerJoin(connectedAccounts, eq(connectedAccounts.prestataireId, paymentTransfers.prestataireId))
    .where(and(eq(paymentTransfers.status, 'held'), inArray(paymentTransfers.holdReason, reasons)));
}

export async function findPayoutByPayoutId(db: DbTx, payoutId: string): Promise<Payout | undefined> {
  const [row] = await db.select().from(payouts).where(eq(payouts.payoutId, payoutId)).for('update');
  return row;
}

export async function updatePayout(db: DbTx, id: number, patch: Partial<typeof payouts.$inferInsert>): Promise<Payout> {
  const [row] = await db
    .update(payouts)
    .set({ ...patch, updatedAt: sql`now()` })
    .where(eq(payouts.id, id))
    .returning();
  return row!;
}

export async function listPayouts(db: DbTx, prestataireId: number): Promise<Payout[]> {
  return db.select().from(payouts).where(eq(payouts.prestataireId, prestataireId)).orderBy(desc(payouts.createdAt), desc(payouts.id));
}

// ---- invoices -----------------------------------------------------------------------------------

/**
 * Issues the invoice of a payment with the next number of its year. The counter row is updated in
 * the caller's transaction: concurrent issues queue on it, and a rollback gives the number back.
 */
export async function issueInvoice(db: DbTx, paymentId: number, year: number) {
  const [existing] = await db.select().from(invoices).where(eq(invoices.paymentId, paymentId));
  if (existing) return existing;
  const [counter] = await db
    .insert(invoiceCounters)
    .values({ year, lastNumber: 1 })
    .onConflictDoUpdate({ target: invoiceCounters.year, set: { lastNumber: sql`${invoiceCounters.lastNumber} + 1` } })
    .returning();
  const sequence = counter!.lastNumber;
  const [row] = await db
    .insert(invoices)
    .values({ paymentId, year, sequence, number: `${year}-${String(sequence).padStart(6, '0')}` })
    .returning();
  return row!;
}

export async function findInvoice(db: DbTx, paymentId: number) {
  const [row] = await db.select().from(invoices).where(eq(invoices.paymentId, paymentId));
  return row;
}

/** What an invoice prints: the parties, the service, the appointment. */
export async function invoiceParties(db: DbTx, payment: Payment) {
  const [client] = await db
    .select({ firstName: users.firstName, lastName: users.lastName, email: users.email, lang: users.lang })
    .from(users)
    .where(eq(users.id, payment.clientId));
  const [seller] = await db
    .select({
      firstName: users.firstName,
      lastName: users.lastName,
      email: users.email,
      businessName: prestataireProfiles.businessName,
      siret: prestataireProfiles.siret,
      address: prestataireProfiles.address,
      postalCode: prestataireProfiles.postalCode,
      city: prestataireProfiles.city,
    })
    .from(users)
    .leftJoin(prestataireProfiles, eq(prestataireProfiles.userId, users.id))
    .where(eq(users.id, payment.prestataireId));
  const [appointment] = await db
    .select({ startsAt: appointments.startsAt, serviceName: services.name })
    .from(appointments)
    .innerJoin(services, eq(services.id, appointments.serviceId))
    .where(eq(appointments.id, payment.appointmentId));
  return { client: client!, seller: seller!, appointment: appointment! };
}

export async function userIdentity(db: DbTx, userId: number) {
  const [row] = await db
    .select({ email: users.email, firstName: users.firstName, lastName: users.lastName, businessName: prestataireProfiles.businessName })
    .from(users)
    .leftJoin(prestataireProfiles, eq(prestataireProfiles.userId, users.id))
    .where(eq(users.id, userId));
  return row!;
}

export async function userLang(db: DbTx, userId: number) {
  const [row] = await db.select({ lang: users.lang }).from(users).where(eq(users.id, userId));
  return row?.lang ?? 'fr';
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

/** Whether a conversation about this appointment has a dispute open (its transfer waits). */
export async function hasOpenConversationDispute(db: DbTx, appointmentId: number): Promise<boolean> {
  const [row] = await db
    .select({ id: conversations.id })
    .from(conversations)
    .where(and(eq(conversations.appointmentId, appointmentId), eq(conversations.disputeStatus, 'open')))
    .limit(1);
  return row !== undefined;
}
