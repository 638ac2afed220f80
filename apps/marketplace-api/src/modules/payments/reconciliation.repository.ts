import { and, asc, count, eq, inArray, isNull, notInArray, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { appointments, connectedAccounts, PAID_PAYMENT_STATUSES, paymentTransfers, payments, reconciliationItems, type ReconciliationItem } from '../../db/schema/index.js';

export interface Difference {
  key: string;
  kind: string;
  paymentId?: number | null;
  prestataireId?: number | null;
  expectedCents?: number | null;
  actualCents?: number | null;
  detail: string;
}

/** Paid payments, oldest first, one page at a time (by id). */
export async function paidPaymentsAfter(db: DbTx, afterId: number, limit: number) {
  return db
    .select({ payment: payments, transfer: paymentTransfers, appointmentStatus: appointments.status })
    .from(payments)
    .leftJoin(paymentTransfers, eq(paymentTransfers.paymentId, payments.id))
    .innerJoin(appointments, eq(appointments.id, payments.appointmentId))
    .where(and(inArray(payments.status, [...PAID_PAYMENT_STATUSES]), sql`${payments.id} > ${afterId}`))
    .orderBy(asc(payments.id))
    .limit(limit);
}

export async function connectedAccountsAfter(db: DbTx, afterId: number, limit: number) {
  return db
    .select()
    .from(connectedAccounts)
    .where(sql`${connectedAccounts.prestataireId} > ${afterId}`)
    .orderBy(asc(connectedAccounts.prestataireId))
    .limit(limit);
}

/**
 * Records what a run found: a difference already open keeps its first sighting; one no longer found
 * is resolved. Answers the number of open differences.
 */
export async function recordRun(db: DbTx, found: Difference[]): Promise<number> {
  for (const d of found) {
    const values = {
      key: d.key,
      kind: d.kind,
      paymentId: d.paymentId ?? null,
      prestataireId: d.prestataireId ?? null,
      expectedCents: d.expectedCents ?? null,
      actualCents: d.actualCents ?? null,
      detail: d.detail,
    };
    const [updated] = await db
      .update(reconciliationItems)
      .set({ ...values, lastSeenAt: sql`now()` })
      .where(and(eq(reconciliationItems.key, d.key), isNull(reconciliationItems.resolvedAt)))
      .returning({ id: reconciliationItems.id });
    if (!updated) await db.insert(reconciliationItems).values(values);
  }
  const keys = found.map((d) => d.key);
  await db
    .update(reconciliationItems)
    .set({ resolvedAt: sql`now()` })
    .where(and(isNull(reconciliationItems.resolvedAt), keys.length > 0 ? notInArray(reconciliationItems.key, keys) : undefined));
  return countOpen(db);
}

export async function countOpen(db: DbTx): Promise<number> {
  const [row] = await db.select({ n: count() }).from(reconciliationItems).where(isNull(reconciliationItems.resolvedAt));
  return row?.n ?? 0;
}

export async function listOpen(db: DbTx, limit: number, offset: number): Promise<{ rows: ReconciliationItem[]; total: number }> {
  const [rows, total] = await Promise.all([
    db.select().from(reconciliationItems).where(isNull(reconciliationItems.resolvedAt)).orderBy(asc(reconciliationItems.id)).limit(limit).offset(offset),
    countOpen(db),
  ]);
  return { rows, total };
}
