import { and, eq, inArray, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { cities, userTokens, users } from '../../db/schema/index.js';

export async function findCity(db: DbTx, id: number) {
  const [city] = await db
    .select({ id: cities.id, name: cities.name, latitude: cities.latitude, longitude: cities.longitude })
    .from(cities)
    .where(eq(cities.id, id))
    .limit(1);
  return city;
}

/** Records a sign-in; `updated_at` is left alone, it tracks changes to the account. */
export async function touchLastLogin(db: DbTx, userId: number) {
  await db.update(users).set({ lastLoginAt: sql`now()` }).where(eq(users.id, userId));
}

/**
 * Replaces the password hash only if it is still the one that was checked, so that of two racing
 * changes only the first wins. Answers false when the password changed meanwhile.
 */
export async function replacePasswordHash(db: DbTx, userId: number, expected: string | null, next: string) {
  const rows = await db
    .update(users)
    .set({ passwordHash: next, updatedAt: sql`now()` })
    .where(and(eq(users.id, userId), expected === null ? sql`${users.passwordHash} is null` : eq(users.passwordHash, expected)))
    .returning({ id: users.id });
  return rows.length === 1;
}

/** A reset link or code asked for before the change must not undo it. */
export async function deletePasswordResetTokens(db: DbTx, userId: number) {
  await db
    .delete(userTokens)
    .where(and(eq(userTokens.userId, userId), inArray(userTokens.purpose, ['password_reset_link', 'password_reset_otp', 'password_reset_grant'])));
}
