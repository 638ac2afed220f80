import { AsyncLocalStorage } from 'node:async_hooks';
import { sql, type SQL } from 'drizzle-orm';
import { isDatabaseUnavailable } from './faults.js';
import type { Database, DbOrTx, Transaction } from './types.js';

/**
 * The work of a request that holds an `Idempotency-Key`'s claim (see createIdempotencyStore): each
 * transaction it commits also counts itself on the claim's row, in that transaction. When the
 * answer to a commit is lost (the connection dropped while it was in flight, as in a failover),
 * the count on the row tells afterwards whether that commit happened.
 */
export interface ClaimedWork {
  /** The claim's row and the value only this request knows. */
  id: string;
  owner: string;
  /** Transactions of this work whose commit was answered. */
  commits: number;
  /** A commit was sent and its answer lost: it may or may not have happened. */
  uncertain: boolean;
  /**
   * Set once the request's answer is being settled: work its handler left running (an event
   * handled after the answer, a job it started) inherits the context but is no longer the claim's.
   */
  settled?: boolean;
}

const claimed = new AsyncLocalStorage<ClaimedWork>();

/** The claim whose work is running here, if its answer is not settled yet. */
function openWork(): ClaimedWork | undefined {
  const work = claimed.getStore();
  return work && !work.settled ? work : undefined;
}

/**
 * Whether the code running here is a claim's work whose answer is not settled: its writes must go
 * through claimedWrite or claimedStatement, in statements of its own, never merged with another
 * request's (the claim's row counts the commits of this request alone).
 */
export function inClaimedWork(): boolean {
  return openWork() !== undefined;
}

/** Runs `fn` (a route's handler) as a claim's work: the transactions it opens mark the claim. */
export function runClaimedWork<T>(work: ClaimedWork, fn: () => T): T {
  return claimed.run(work, fn);
}

/**
 * Runs `fn` in a transaction, reusing the caller's when it already holds one, so that a service can
 * compose repository calls without caring who opened the transaction.
 *
 * In a claim's work (runClaimedWork) the transaction also counts itself on the claim's row. If
 * its commit then fails as the database being unavailable, the commit was in flight and may have
 * happened: the work is marked uncertain and `fn`'s result returned all the same, for the answer
 * to be built; the claim's settling (settleUncertain) then keeps that answer if the count shows
 * the commit happened, and answers 503 and releases the claim if it did not. Nothing is done twice
 * by a retry, and nothing is acknowledged that was not stored.
 */
export async function withTransaction<S extends Record<string, unknown>, T>(
  db: DbOrTx<S>,
  fn: (tx: DbOrTx<S>) => Promise<T>,
): Promise<T> {
  if (isTransaction(db)) return fn(db);
  const work = openWork();
  if (!work) return (db as Database<S>).transaction((tx) => fn(tx as Transaction<S>));
  let committing = false;
  let value: T | undefined;
  try {
    const result = await (db as Database<S>).transaction(async (tx) => {
      value = await fn(tx as Transaction<S>);
      await tx.execute(sql`update idempotency_keys set commits = commits + 1 where id = ${work.id} and owner = ${work.owner}`);
      committing = true;
      return value;
    });
    work.commits += 1;
    return result;
  } catch (error) {
    if (!committing || !isDatabaseUnavailable(error)) throw error;
    work.uncertain = true;
    return value as T;
  }
}

/**
 * Runs `read` in a transaction whose statements are planned generically (`plan_cache_mode =
 * force_generic_plan`), each keeping its generic plan for the connection's later runs: for reads
 * whose plan is the same for every value, on connections that otherwise plan each statement for
 * its values. The setting is awaited before the read starts: issued together (Promise.all), the
 * read's first statement went out first and ran under the connection's own mode. Inside a
 * caller's transaction the setting holds until that transaction ends.
 */
export function withGenericPlan<S extends Record<string, unknown>, T>(db: DbOrTx<S>, read: (tx: DbOrTx<S>) => Promise<T>): Promise<T> {
  return withTransaction(db, async (tx) => {
    await tx.execute(sql`select set_config('plan_cache_mode', 'force_generic_plan', true)`);
    return read(tx);
  });
}

/**
 * A write of one statement (or several) that a retry must not repeat once it was stored: in a
 * claim's work, run in a transaction that marks the claim (withTransaction); otherwise as it is,
 * a statement being atomic on its own.
 */
export function claimedWrite<S extends Record<string, unknown>, T>(db: DbOrTx<S>, fn: (tx: DbOrTx<S>) => Promise<T>): Promise<T> {
  return !isTransaction(db) && openWork() ? withTransaction(db, fn) : fn(db);
}

/** The clause that counts a commit on the claim's row, with an optional condition of its own. */
export type ClaimMark = (condition?: SQL) => SQL;

/**
 * One statement as the work of a claim, counting its commit on the claim's row in the statement
 * itself: `statement` gets `mark`, to put in front of it as a data-modifying `WITH` (one statement,
 * one round trip, where withTransaction adds three). If the statement fails as the database being
 * unavailable, it may or may not have run: the work is marked uncertain and `lost()` stands for its
 * result (what it returns when it did run), for the answer to be built and the claim settled from
 * the count. Outside a claim's work, or inside a transaction, `statement` runs without a mark.
 */
export async function claimedStatement<S extends Record<string, unknown>, T>(
  db: DbOrTx<S>,
  statement: (mark: ClaimMark | undefined) => Promise<T>,
  lost: () => T,
): Promise<T> {
  const work = openWork();
  if (!work || isTransaction(db)) return statement(undefined);
  const mark: ClaimMark = (condition) =>
    sql`update idempotency_keys set commits = commits + 1 where id = ${work.id} and owner = ${work.owner}${condition ? sql` and ${condition}` : sql``}`;
  try {
    const result = await statement(mark);
    work.commits += 1;
    return result;
  } catch (error) {
    if (!isDatabaseUnavailable(error)) throw error;
    work.uncertain = true;
    return lost();
  }
}

function isTransaction(db: DbOrTx): db is Transaction {
  return typeof (db as { rollback?: unknown }).rollback === 'function';
}
