import { withTransaction } from '@repo/db';
import type { DbTx } from '../../db/index.js';
import type { MoneyMove } from '../../db/schema/index.js';
import * as moves from './money-moves.repository.js';

/** What the processor answered to a move's call. */
export type MoveOutcome =
  | { ok: true; processorId: string }
  /** A definitive answer: the same request would be refused again. */
  | { ok: false; kind: 'refused'; code: string | null; message: string }
  /** Unknown or transient (a network error, a timeout, a 5xx, a 429, a key still in use): call again with the same key. */
  | { ok: false; kind: 'unavailable'; code: string | null; message: string };

/**
 * Sorts a processor failure: our ProcessorError carries its kind; the stripe SDK's errors are sorted
 * by their type as Stripe documents them (connection, API and rate-limit errors, and a 409 on a key
 * whose first request still runs, may succeed when retried; the rest will not).
 */
export function outcomeOf(error: unknown): Exclude<MoveOutcome, { ok: true }> {
  const e = (error ?? {}) as { kind?: unknown; type?: unknown; code?: unknown; statusCode?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : null;
  const message = (typeof e.message === 'string' ? e.message : 'The processor failed').slice(0, 500);
  if (e.kind === 'refused' || e.kind === 'unavailable') return { ok: false, kind: e.kind, code, message };
  const status = typeof e.statusCode === 'number' ? e.statusCode : null;
  const transient =
    e.type === 'StripeConnectionError' ||
    e.type === 'StripeAPIError' ||
    e.type === 'StripeRateLimitError' ||
    (status !== null && (status >= 500 || status === 429 || status === 409)) ||
    (status === null && e.type === undefined && !(error instanceof TypeError) && /ECONN|ETIMEDOUT|socket|network|timed out/i.test(message));
  return { ok: false, kind: transient ? 'unavailable' : 'refused', code, message };
}

/** Calls with one key, all answered "unknown", after which the processor is re-read (1+2+4+8+16 s of backoff between). */
export const RECOVER_AFTER_TRIES = 6;

/** Backoff of a move the processor could not answer: 1 s doubling to 5 min, with ±25 % jitter. */
export function retryDelayMs(tries: number): number {
  const base = Math.min(300_000, 1_000 * 2 ** Math.max(0, tries - 1));
  return Math.round(base * (0.75 + Math.random() * 0.5));
}

export interface MoneyMoverDeps {
  db: DbTx;
  /** Calls the processor for one attempt of a move (no transaction open); answers the processor's object id. */
  call(move: MoneyMove): Promise<string>;
  /** Records a move's answer and its effects, in the transaction that settles the move. */
  settled(tx: DbTx, move: MoneyMove, outcome: MoveOutcome): Promise<void>;
  /** After a move settled and its transaction committed (the built-in processor's webhooks). */
  afterSettled?(): Promise<void>;
  /**
   * Looks for the move's object at the processor by the reference it carries: its id when the
   * processor made it, null when it surely did not. Asked once the same key has answered "unknown"
   * `recoverAfterTries` times, since Stripe keeps a 500 under a key for 24 hours.
   */
  find?(move: MoneyMove): Promise<string | null>;
  /** Calls with one key after which the processor is re-read (default 6: about a minute of backoff). */
  recoverAfterTries?: number;
  /** How long a claim holds a move: more than the processor client's longest call with its retries. */
  leaseMs: number;
  log?: { warn(obj: object, msg: string): void };
}

/**
 * Drives money moves through their phases: claim (a short transaction), the processor call with no
 * transaction open, then settle (a short transaction). Any instance may drive any move; the claim
 * makes one of them the caller, and a caller that vanished is overtaken once its lease ends, with the
 * same idempotency key, so the processor acts once.
 */
export function createMoneyMover(deps: MoneyMoverDeps) {
  const { db } = deps;

  // The moves this process is driving now, by id: a second caller (the route that asked for a
  // move, while the worker kicked for it already claimed it) waits for that run's settlement
  // instead of reading the move half-way.
  const inFlight = new Map<number, Promise<MoneyMove | undefined>>();

  /** Drives one move once: its result once settled, or the move as it stands if another instance holds it. */
  function execute(id: number): Promise<MoneyMove | undefined> {
    const current = inFlight.get(id);
    if (current) return current;
    const run = executeOnce(id).finally(() => inFlight.delete(id));
    inFlight.set(id, run);
    return run;
  }

  async function executeOnce(id: number): Promise<MoneyMove | undefined> {
    const claimed = await moves.claimMove(db, id, deps.leaseMs);
    if (!claimed) return moves.findMove(db, id);
    let outcome: MoveOutcome;
    try {
      outcome = { ok: true, processorId: await deps.call(claimed) };
    } catch (error) {
      outcome = outcomeOf(error);
      deps.log?.warn({ move_id: claimed.id, kind: claimed.kind, attempt: claimed.attempt, try: claimed.tries, outcome: outcome.kind, code: outcome.code }, 'money move not done');
    }
    // The same key keeps answering "unknown": the processor may have kept a failure under it (Stripe
    // replays a 500 for 24 hours). Its objects say whether the move happened: if it did, it is done;
    // if it surely did not, the next attempt gets a new key.
    let renew = false;
    if (!outcome.ok && outcome.kind === 'unavailable' && deps.find && claimed.tries >= (deps.recoverAfterTries ?? RECOVER_AFTER_TRIES)) {
      try {
        const found = await deps.find(claimed);
        if (found) outcome = { ok: true, processorId: found };
        else renew = true;
      } catch (error) {
        deps.log?.warn({ err: error, move_id: claimed.id }, 'money move: the processor could not be re-read');
      }
    }
    await withTransaction(db, async (tx) => {
      const patch = outcome.ok
        ? { status: 'succeeded' as const, processorId: outcome.processorId, failureCode: null, failureReason: null, finishedAt: new Date() }
        : outcome.kind === 'refused'
          ? { status: 'failed' as const, failureCode: outcome.code, failureReason: outcome.message, finishedAt: new Date() }
          : { status: 'retrying' as const, failureCode: outcome.code, failureReason: outcome.message, retryInMs: retryDelayMs(claimed.tries) };
      const settled = await moves.settleMove(tx, claimed, renew ? { ...patch, retryInMs: 0 } : patch);
      if (settled && renew) await moves.renewAttempt(tx, settled.id);
      // Overtaken (our lease ran out and another caller took the move): its answer is the one kept.
      if (settled && settled.status !== 'retrying') await deps.settled(tx, settled, outcome);
    });
    await deps.afterSettled?.();
    return moves.findMove(db, id);
  }

  let running: Promise<number> | undefined;
  let again = false;

  /** Drives every due move once (a pass asked for while one runs is run after it). */
  async function drain(limit = 100): Promise<number> {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      let done = 0;
      do {
        again = false;
        for (const id of await moves.dueMoves(db, limit)) {
          await execute(id);
          done += 1;
        }
      } while (again);
      return done;
    })().finally(() => {
      running = undefined;
    });
    return running;
  }

  return { execute, drain, idle: () => running?.catch(() => 0) ?? Promise.resolve(0) };
}

export type MoneyMover = ReturnType<typeof createMoneyMover>;
