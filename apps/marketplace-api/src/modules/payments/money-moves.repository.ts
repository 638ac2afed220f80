import { and, asc, eq, inArray, lte, or, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { LIVE_MONEY_MOVE_STATUSES, moneyMoves, type MoneyMove, type MoneyMoveKind } from '../../db/schema/index.js';

/** The processor's idempotency key of a move's attempt: ids only, never a name, an IBAN or a card. */
export const moveKey = (kind: MoneyMoveKind, id: number, attempt: number) => `${kind}-${id}-${attempt}`;

/**
 * Commits a move with the key of its first attempt. A move with the same `origin` (what asked for it)
 * already there is answered instead, so an origin is moved once.
 */
export async function insertMove(
  db: DbTx,
  values: Omit<typeof moneyMoves.$inferInsert, 'id' | 'idempotencyKey' | 'status' | 'attempt' | 'tries'>,
): Promise<{ move: MoneyMove; created: boolean }> {
  const [row] = await db.insert(moneyMoves).values(values).onConflictDoNothing().returning();
  if (!row) {
    const [existing] = await db.select().from(moneyMoves).where(eq(moneyMoves.origin, values.origin!));
    return { move: existing!, created: false };
  }
  const [keyed] = await db
    .update(moneyMoves)
    .set({ idempotencyKey: moveKey(row.kind, row.id, row.attempt) })
    .where(eq(moneyMoves.id, row.id))
    .returning();
  return { move: keyed!, created: true };
}

export async function findMove(db: DbTx, id: number): Promise<MoneyMove | undefined> {
  const [row] = await db.select().from(moneyMoves).where(eq(moneyMoves.id, id));
  return row;
}

export async function findMoveByOrigin(db: DbTx, origin: string, opts: { lock?: boolean } = {}): Promise<MoneyMove | undefined> {
  const q = db.select().from(moneyMoves).where(eq(moneyMoves.origin, origin));
  const [row] = opts.lock ? await q.for('update') : await q;
  return row;
}

/** A failed move's next attempt, with a new key (the processor keeps the refusal under the old one). */
export async function retryMove(db: DbTx, id: number, patch: { amountCents: number; target: string | null }): Promise<MoneyMove> {
  const [row] = await db
    .update(moneyMoves)
    .set({
      ...patch,
      status: 'pending',
      attempt: sql`${moneyMoves.attempt} + 1`,
      idempotencyKey: sql`${moneyMoves.kind} || '-' || ${moneyMoves.id} || '-' || (${moneyMoves.attempt} + 1)`,
      tries: 0,
      failureCode: null,
      failureReason: null,
      finishedAt: null,
      nextAttemptAt: sql`now()`,
      updatedAt: sql`now()`,
    })
    .where(and(eq(moneyMoves.id, id), eq(moneyMoves.status, 'failed')))
    .returning();
  return row!;
}

/**
 * A retrying move's next attempt, with a new key: the processor was re-read and surely did not make
 * the move under the old one.
 */
export async function renewAttempt(db: DbTx, id: number): Promise<void> {
  await db
    .update(moneyMoves)
    .set({
      attempt: sql`${moneyMoves.attempt} + 1`,
      idempotencyKey: sql`${moneyMoves.kind} || '-' || ${moneyMoves.id} || '-' || (${moneyMoves.attempt} + 1)`,
      tries: 0,
      nextAttemptAt: sql`now()`,
      updatedAt: sql`now()`,
    })
    .where(and(eq(moneyMoves.id, id), eq(moneyMoves.status, 'retrying')));
}

/**
 * Takes a move to call the processor for it: one that waits (`pending`, `retrying` when due) or one
 * whose caller's lease ran out (it crashed or lost the answer). Conditional, so of two instances
 * only one calls; the other answers undefined.
 */
export async function claimMove(db: DbTx, id: number, leaseMs: number): Promise<MoneyMove | undefined> {
  const [row] = await db
    .update(moneyMoves)
    .set({
      status: 'executing',
      tries: sql`${moneyMoves.tries} + 1`,
      leaseUntil: sql`now() + make_interval(secs => ${leaseMs / 1000}::float8)`,
      updatedAt: sql`now()`,
    })
    .where(
      and(
        eq(moneyMoves.id, id),
        or(
          and(inArray(moneyMoves.status, ['pending', 'retrying']), lte(moneyMoves.nextAttemptAt, sql`now()`)),
          and(eq(moneyMoves.status, 'executing'), lte(moneyMoves.leaseUntil, sql`now()`)),
        ),
      ),
    )
    .returning();
  return row;
}

/**
 * Records the processor's answer to the claim `claimed` only if it is still the current one (same
 * attempt and try): a caller whose lease ran out and was overtaken records nothing. Locks the row.
 */
export async function settleMove(
  db: DbTx,
  claimed: MoneyMove,
  patch: Partial<Pick<MoneyMove, 'status' | 'processorId' | 'failureCode' | 'failureReason' | 'finishedAt'>> & { retryInMs?: number },
): Promise<MoneyMove | undefined> {
  const { retryInMs, ...set } = patch;
  const [row] = await db
    .update(moneyMoves)
    .set({
      ...set,
      leaseUntil: null,
      ...(retryInMs === undefined ? {} : { nextAttemptAt: sql`now() + make_interval(secs => ${retryInMs / 1000}::float8)` }),
      updatedAt: sql`now()`,
    })
    .where(
      and(
        eq(moneyMoves.id, claimed.id),
        eq(moneyMoves.status, 'executing'),
        eq(moneyMoves.attempt, claimed.attempt),
        eq(moneyMoves.tries, claimed.tries),
      ),
    )
    .returning();
  return row;
}

/** The moves of a payment the processor has not answered for good, of one kind (locks nothing). */
export async function liveMovesOf(db: DbTx, paymentId: number, kind: MoneyMoveKind): Promise<MoneyMove[]> {
  return db
    .select()
    .from(moneyMoves)
    .where(and(eq(moneyMoves.paymentId, paymentId), eq(moneyMoves.kind, kind), inArray(moneyMoves.status, [...LIVE_MONEY_MOVE_STATUSES])));
}

/** What the live moves of a payment of one kind carry (refunds or reversals on their way). */
export async function liveAmountOf(db: DbTx, paymentId: number, kind: MoneyMoveKind): Promise<number> {
  return (await liveMovesOf(db, paymentId, kind)).reduce((sum, m) => sum + m.amountCents, 0);
}

export async function movesOfPayment(db: DbTx, paymentId: number): Promise<MoneyMove[]> {
  return db.select().from(moneyMoves).where(eq(moneyMoves.paymentId, paymentId)).orderBy(asc(moneyMoves.id));
}

/** Live payouts of a prestataire (one at a time). */
export async function livePayoutsOf(db: DbTx, prestataireId: number): Promise<MoneyMove[]> {
  return db
    .select()
    .from(moneyMoves)
    .where(and(eq(moneyMoves.prestataireId, prestataireId), eq(moneyMoves.kind, 'payout'), inArray(moneyMoves.status, [...LIVE_MONEY_MOVE_STATUSES])));
}

/** Moves due for a call: waiting and due, or executing past their lease; oldest first. */
export async function dueMoves(db: DbTx, limit: number): Promise<number[]> {
  const rows = await db
    .select({ id: moneyMoves.id })
    .from(moneyMoves)
    .where(
      and(
        inArray(moneyMoves.status, [...LIVE_MONEY_MOVE_STATUSES]),
        lte(moneyMoves.nextAttemptAt, sql`now()`),
        or(inArray(moneyMoves.status, ['pending', 'retrying']), lte(moneyMoves.leaseUntil, sql`now()`)),
      ),
    )
    .orderBy(asc(moneyMoves.nextAttemptAt), asc(moneyMoves.id))
    .limit(limit);
  return rows.map((r) => r.id);
}

/** Makes a payment's waiting moves due now (the processor just told us something about them). */
export async function hurryMoves(db: DbTx, paymentId: number, kind: MoneyMoveKind): Promise<void> {
  await db
    .update(moneyMoves)
    .set({ nextAttemptAt: sql`now()`, updatedAt: sql`now()` })
    .where(and(eq(moneyMoves.paymentId, paymentId), eq(moneyMoves.kind, kind), eq(moneyMoves.status, 'retrying')));
}

/** How many moves wait on the processor, and the age of the oldest (for /metrics). */
export async function liveMoveStats(db: DbTx): Promise<{ count: number; oldestSeconds: number }> {
  const [row] = await db
    .select({
      count: sql<number>`count(*)::int`,
      oldest: sql<number>`coalesce(extract(epoch from now() - min(${moneyMoves.createdAt})), 0)::float8`,
    })
    .from(moneyMoves)
    .where(inArray(moneyMoves.status, [...LIVE_MONEY_MOVE_STATUSES]));
  return { count: Number(row?.count ?? 0), oldestSeconds: Number(row?.oldest ?? 0) };
}

/**
 * A move the processor made without our asking (a refund or a reversal from its dashboard, learnt
 * from a webhook): committed as done, so the ledger and the payment follow it. Undefined when its
 * origin was recorded already (the same event delivered again).
 */
export async function insertSettledMove(
  db: DbTx,
  values: Omit<typeof moneyMoves.$inferInsert, 'id' | 'idempotencyKey' | 'status' | 'attempt' | 'tries'>,
): Promise<MoneyMove | undefined> {
  const [row] = await db
    .insert(moneyMoves)
    .values({ ...values, status: 'succeeded', finishedAt: sql`now()` })
    .onConflictDoNothing()
    .returning();
  return row;
}
