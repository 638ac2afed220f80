import { and, eq, gt, inArray, isNull, lt, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { users, userTokens, type TokenPurpose } from '../../db/schema/index.js';

/**
 * Stores a one-time code or link token (its hash) for a user and purpose, replacing any earlier
 * one: only the newest code works.
 */
export async function issueToken(
  db: DbTx,
  values: { userId: number; purpose: TokenPurpose; tokenHash: string; ttlMinutes: number; email?: string },
) {
  const expiresAt = sql`now() + make_interval(mins => ${values.ttlMinutes})`;
  const email = values.email ?? null;
  await db
    .insert(userTokens)
    .values({ userId: values.userId, purpose: values.purpose, tokenHash: values.tokenHash, expiresAt, email })
    .onConflictDoUpdate({
      target: [userTokens.userId, userTokens.purpose],
      set: { tokenHash: values.tokenHash, expiresAt, email, attempts: 0, usedAt: null, createdAt: sql`now()` },
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

/**
 * One attempt at a code, in a single conditional update so that neither racing attempts nor
 * racing correct answers slip past the attempt limit or single use: the right code marks the row
 * used, a wrong one counts an attempt. `none` when there is no live code with attempts left.
 */
export async function attemptCode(
  db: DbTx,
  values: { userId: number; purpose: TokenPurpose; codeHash: string; maxAttempts: number },
): Promise<'redeemed' | 'wrong' | 'none'> {
  const matches = sql`${userTokens.tokenHash} = ${values.codeHash}`;
  const [row] = await db
    .update(userTokens)
    .set({
      attempts: sql`${userTokens.attempts} + (case when ${matches} then 0 else 1 end)`,
      usedAt: sql`case when ${matches} then now() else null end`,
    })
    .where(
      and(
        eq(userTokens.userId, values.userId),
        eq(userTokens.purpose, values.purpose),
        isNull(userTokens.usedAt),
        gt(userTokens.expiresAt, sql`now()`),
        lt(userTokens.attempts, values.maxAttempts),
      ),
    )
    .returning({ usedAt: userTokens.usedAt });
  if (!row) return 'none';
  return row.usedAt ? 'redeemed' : 'wrong';
}

/**
 * Uses up a live link token or grant of an active, undeleted account; answers its user and the
 * address it is about (the tokens of an e-mail change carry one), or undefined when the token is
 * unknown, expired, already used or its account may not act.
 */
async function redeemToken(db: DbTx, purpose: TokenPurpose, tokenHash: string) {
  const activeUsers = db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.status, 'active'), isNull(users.deletedAt)));
  const [row] = await db
    .update(userTokens)
    .set({ usedAt: sql`now()` })
    .where(
      and(
        eq(userTokens.tokenHash, tokenHash),
        eq(userTokens.purpose, purpose),
        isNull(userTokens.usedAt),
        gt(userTokens.expiresAt, sql`now()`),
        inArray(userTokens.userId, activeUsers),
      ),
    )
    .returning({ userId: userTokens.userId, email: userTokens.email });
  return row;
}

/** Uses up a live link token or grant (see redeemToken); answers its user. */
export async function redeemTokenByHash(db: DbTx, purpose: TokenPurpose, tokenHash: string) {
  return (await redeemToken(db, purpose, tokenHash))?.userId;
}

/** Uses up a token of an e-mail change (see redeemToken); answers the user and the address it is about. */
export async function redeemEmailTokenByHash(db: DbTx, purpose: TokenPurpose, tokenHash: string) {
  const row = await redeemToken(db, purpose, tokenHash);
  return row?.email ? { userId: row.userId, email: row.email } : undefined;
}

/** Drops a user's codes and tokens of these purposes, live or not. */
export async function deleteTokens(db: DbTx, userId: number, purposes: readonly TokenPurpose[]) {
  await db.delete(userTokens).where(and(eq(userTokens.userId, userId), inArray(userTokens.purpose, [...purposes])));
}
