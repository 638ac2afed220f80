import { and, asc, count, eq, inArray, isNull, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { prestataireProfiles, users, type PrestataireProfile, type ValidationStatus } from '../../db/schema/index.js';

const livePrestataire = (userId: number) => and(eq(users.id, userId), eq(users.role, 'prestataire'), isNull(users.deletedAt));

/** A live prestataire account and its profile; any other id (client, admin, deleted) is not found. */
export async function findPrestataire(db: DbTx, userId: number) {
  const [row] = await db
    .select({ user: users, profile: prestataireProfiles })
    .from(users)
    .innerJoin(prestataireProfiles, eq(prestataireProfiles.userId, users.id))
    .where(livePrestataire(userId))
    .limit(1);
  return row;
}

/**
 * The prestataire's profile row, locked until the end of the transaction, so the status read as
 * "before" is the one the following update replaces.
 */
export async function lockPrestataire(tx: DbTx, userId: number) {
  const [row] = await tx
    .select({ user: users, profile: prestataireProfiles })
    .from(users)
    .innerJoin(prestataireProfiles, eq(prestataireProfiles.userId, users.id))
    .where(livePrestataire(userId))
    .limit(1)
    .for('update', { of: prestataireProfiles });
  return row;
}

export interface ValidationChange {
  validationStatus: ValidationStatus;
  validationNote?: string | null;
  validatedAt?: Date | null;
  suspendedAt?: Date | null;
}

/**
 * Moves a profile's validation status only when it is currently one of `from`; undefined when it is
 * not, so two racing admins (or an admin racing an upload) cannot both win.
 */
export async function moveValidationStatus(
  db: DbTx,
  userId: number,
  from: readonly ValidationStatus[],
  change: ValidationChange,
): Promise<PrestataireProfile | undefined> {
  const [row] = await db
    .update(prestataireProfiles)
    .set({ ...change, updatedAt: sql`now()` })
    .where(and(eq(prestataireProfiles.userId, userId), inArray(prestataireProfiles.validationStatus, [...from])))
    .returning();
  return row;
}

/** Prestataires waiting on an admin, longest-waiting first. */
export async function listQueue(db: DbTx, statuses: ValidationStatus[], limit: number, offset: number) {
  const where = and(eq(users.role, 'prestataire'), isNull(users.deletedAt), inArray(prestataireProfiles.validationStatus, statuses));
  const [rows, [total]] = await Promise.all([
    db
      .select({ user: users, profile: prestataireProfiles })
      .from(prestataireProfiles)
      .innerJoin(users, eq(users.id, prestataireProfiles.userId))
      .where(where)
      .orderBy(asc(users.createdAt), asc(users.id))
      .limit(limit)
      .offset(offset),
    db
      .select({ n: count() })
      .from(prestataireProfiles)
      .innerJoin(users, eq(users.id, prestataireProfiles.userId))
      .where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}
