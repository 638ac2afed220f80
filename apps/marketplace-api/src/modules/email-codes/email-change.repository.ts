import { and, eq, isNull, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { users } from '../../db/schema/index.js';

/**
 * Makes the pending address the account's e-mail, verified (the link reached it), only if it is
 * still the pending one: a change asked for since, or cancelled, is not overtaken by an old link.
 */
export async function applyPendingEmail(db: DbTx, userId: number, email: string) {
  const [row] = await db
    .update(users)
    .set({ email, pendingEmail: null, emailVerifiedAt: sql`now()`, updatedAt: sql`now()` })
    .where(and(eq(users.id, userId), eq(users.pendingEmail, email), isNull(users.deletedAt)))
    .returning();
  return row;
}

/**
 * Puts the former address back and locks the account until a password reset: no password, no
 * pending change, no social identity linked meanwhile (the owner links theirs again by signing in).
 */
export async function restoreEmail(db: DbTx, userId: number, email: string) {
  const [row] = await db
    .update(users)
    .set({
      email,
      pendingEmail: null,
      emailVerifiedAt: sql`now()`,
      passwordHash: null,
      googleSubject: null,
      appleSubject: null,
      updatedAt: sql`now()`,
    })
    .where(and(eq(users.id, userId), isNull(users.deletedAt)))
    .returning();
  return row;
}
