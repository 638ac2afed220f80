import { and, eq, gt, isNull, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { userTokens, type TokenPurpose } from '../../db/schema/index.js';

/**
 * Stores a one-time code or link token (its hash) for a user and purpose, replacing any earlier
 * one: only the newest code works.
 */
export async function issueToken(db: DbTx, values: { userId: number; purpose: TokenPurpose; tokenHash: string; ttlMinutes: number }) {
  const expiresAt = sql`now() + make_interval(mins => ${values.ttlMinutes})`;
  await db
    .insert(userTokens)
    .values({ userId: values.userId, purpose: values.purpose, tokenHash: values.tokenHash, expiresAt })
    .onConflictDoUpdate({
      target: [userTokens.userId, userTokens.purpose],
      set: { tokenHash: values.tokenHash, expiresAt, attempts: 0, usedAt: null, createdAt: sql`now()` },
    });
}

/** The live (unused, unexpired) token of a user and purpose. */
export async function findLiveToken(db: DbTx, userId: number, purpose: TokenPurpose) {
  const [row] = await db
    .select()
    .from(userTokens)
    .where(and(eq(userTokens.userId, userId), eq(userTokens.purpose, purpose), isNull(userTokens.usedAt), gt(userTokens.expiresAt, sql`now()`)))
    .limit(1);
  return row;
}

/** The live token with this hash (links carry no e-mail, so they are found by hash). */
export async function findLiveTokenByHash(db: DbTx, purpose: TokenPurpose, tokenHash: string) {
  const [row] = await db
    .select()
    .from(userTokens)
    .where(and(eq(userTokens.tokenHash, tokenHash), eq(userTokens.purpose, purpose), isNull(userTokens.usedAt), gt(userTokens.expiresAt, sql`now()`)))
    .limit(1);
  return row;
}

/** Marks a token used; false when another request used it first (single use under races). */
export async function consumeToken(db: DbTx, id: number) {
  const rows = await db
    .update(userTokens)
    .set({ usedAt: sql`now()` })
    .where(and(eq(userTokens.id, id), isNull(userTokens.usedAt)))
    .returning({ id: userTokens.id });
  return rows.length === 1;
}

/** Counts a wrong attempt at a code; answers the attempts made so far. */
export async function recordFailedAttempt(db: DbTx, id: number) {
  const [row] = await db
    .update(userTokens)
    .set({ attempts: sql`${userTokens.attempts} + 1` })
    .where(eq(userTokens.id, id))
    .returning({ attempts: userTokens.attempts });
  return row?.attempts ?? 0;
}
