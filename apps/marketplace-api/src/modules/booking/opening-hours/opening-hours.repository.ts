import { and, asc, count, eq, gt, gte, lt, lte, sql, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../../db/index.js';
import { absences, availabilities, closures, prestataireProfiles, type Absence, type Closure } from '../../../db/schema/index.js';

export async function findTimezone(db: DbTx, prestataireId: number) {
  const [row] = await db
    .select({ timezone: prestataireProfiles.timezone })
    .from(prestataireProfiles)
    .where(eq(prestataireProfiles.userId, prestataireId))
    .limit(1);
  return row?.timezone;
}

// ─── Weekly hours ───

export function listAvailabilities(db: DbTx, prestataireId: number) {
  return db
    .select({ id: availabilities.id, dayOfWeek: availabilities.dayOfWeek, startTime: availabilities.startTime, endTime: availabilities.endTime })
    .from(availabilities)
    .where(eq(availabilities.prestataireId, prestataireId))
    .orderBy(asc(availabilities.dayOfWeek), asc(availabilities.startTime), asc(availabilities.id));
}

/** The week's intervals become exactly `rows`; the caller holds the profile's lock. */
export async function replaceAvailabilities(
  db: DbTx,
  prestataireId: number,
  rows: { dayOfWeek: number; startTime: string; endTime: string }[],
) {
  await db.delete(availabilities).where(eq(availabilities.prestataireId, prestataireId));
  if (rows.length > 0) await db.insert(availabilities).values(rows.map((r) => ({ prestataireId, ...r })));
}

// ─── Absences ───

export async function listAbsences(db: DbTx, prestataireId: number, window: { from: Date; to?: Date }, limit: number, offset: number) {
  const filters: SQL[] = [eq(absences.prestataireId, prestataireId), gt(absences.endsAt, window.from)];
  if (window.to) filters.push(lt(absences.startsAt, window.to));
  const where = and(...filters);
  const [rows, [total]] = await Promise.all([
    db.select().from(absences).where(where).orderBy(asc(absences.startsAt), asc(absences.id)).limit(limit).offset(offset),
    db.select({ n: count() }).from(absences).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}

export async function insertAbsence(db: DbTx, values: typeof absences.$inferInsert): Promise<Absence> {
  const [row] = await db.insert(absences).values(values).returning();
  return row!;
}

export async function deleteOwnAbsence(db: DbTx, prestataireId: number, absenceId: number) {
  const [row] = await db
    .delete(absences)
    .where(and(eq(absences.id, absenceId), eq(absences.prestataireId, prestataireId)))
    .returning();
  return row;
}

// ─── Closures ───

export async function listClosures(db: DbTx, prestataireId: number, window: { from: string; to?: string }, limit: number, offset: number) {
  const filters: SQL[] = [eq(closures.prestataireId, prestataireId), gte(closures.endDate, window.from)];
  if (window.to) filters.push(lte(closures.startDate, window.to));
  const where = and(...filters);
  const [rows, [total]] = await Promise.all([
    db.select().from(closures).where(where).orderBy(asc(closures.startDate), asc(closures.id)).limit(limit).offset(offset),
    db.select({ n: count() }).from(closures).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}

export async function insertClosure(db: DbTx, values: typeof closures.$inferInsert): Promise<Closure> {
  const [row] = await db.insert(closures).values(values).returning();
  return row!;
}

const ownClosure = (prestataireId: number, closureId: number) => and(eq(closures.id, closureId), eq(closures.prestataireId, prestataireId));

/** The prestataire's closure, locked for `forUpdate`; another's is not found (undefined). */
export async function findOwnClosure(db: DbTx, prestataireId: number, closureId: number, forUpdate = false) {
  const query = db.select().from(closures).where(ownClosure(prestataireId, closureId)).limit(1);
  const [row] = forUpdate ? await query.for('update') : await query;
  return row;
}

export async function updateOwnClosure(
  db: DbTx,
  prestataireId: number,
  closureId: number,
  values: Partial<Pick<Closure, 'startDate' | 'endDate' | 'reason'>>,
) {
  const [row] = await db
    .update(closures)
    .set({ ...values, updatedAt: sql`now()` })
    .where(ownClosure(prestataireId, closureId))
    .returning();
  return row;
}

export async function deleteOwnClosure(db: DbTx, prestataireId: number, closureId: number) {
  const [row] = await db.delete(closures).where(ownClosure(prestataireId, closureId)).returning();
  return row;
}
