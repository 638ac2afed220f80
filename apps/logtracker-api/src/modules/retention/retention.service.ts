import { sqlState, withTransaction } from '@repo/db';
import type { DbTx } from '../../db/index.js';
import { deleteExpiredTags } from '../patterns/index.js';
import * as repo from './retention.repository.js';
import type { DailyPartition } from './retention.repository.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** Read between batches: once aborted, a run ends after its current batch. */
type StopSignal = Pick<AbortSignal, 'aborted'>;

/** The part of a pino/Fastify logger a retention run writes to. */
interface RetentionLogger {
  info(obj: object, msg?: string): void;
}

export interface RetentionResult {
  /** Logs deleted in this run, across every project, row by row or with their whole day. */
  deleted: number;
  /** Projects examined. */
  projects: number;
  /** Delete statements run: at least one per project. */
  batches: number;
  /** Daily partitions emptied at once (TRUNCATE), every log in them having expired. */
  partitionsEmptied: number;
  /** Empty daily partitions older than every project's retention, dropped. */
  partitionsDropped: number;
  /** Set when another instance was running retention: this run did nothing. */
  skipped?: true;
}

/**
 * The instant before which a project's logs have expired: the start of the UTC day `retentionDays`
 * before today's. Logs go a whole UTC day at a time, so a log is kept at least `retentionDays`
 * days and less than one day more, and a day that has expired for every project holding logs in
 * it goes with its partition instead of row by row.
 */
export function expiryCutoff(now: Date, retentionDays: number): Date {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return new Date(today - retentionDays * DAY_MS);
}

/**
 * How long a run waits for a table lock before giving up on it for this attempt. Emptying a
 * partition locks that partition only (ingestion writes to today's, never blocked); a read of the
 * whole project waits behind it at most this long. Dropping one detaches it first, which locks
 * the logs table itself, so every statement on logs, inserts included, waits behind it at most
 * DROP_LOCK_TIMEOUT_MS.
 */
const TRUNCATE_LOCK_TIMEOUT_MS = 200;
const DROP_LOCK_TIMEOUT_MS = 5;
/** Attempts at a lock within one run, a pause apart; what is left goes at the next run. */
const LOCK_ATTEMPTS = 20;
const LOCK_RETRY_PAUSE_MS = 100;
const BUSY = Symbol('lock not granted');

/**
 * Deletes logs older than each project's `retention_days` (see expiryCutoff), without pausing
 * ingestion:
 * - a daily partition whose logs have all expired is emptied with TRUNCATE, which locks that
 *   partition alone, and its counts leave the rollups in the same transaction; once its day has
 *   expired for every project, the empty partition is detached under a lock timeout of a few
 *   milliseconds, retried, and left for the next run if the logs table stays busy, then dropped;
 * - the other expired logs (a project keeping its logs less long than its neighbours in a
 *   partition, logs in the default partition) are deleted a bounded batch at a time, each batch a
 *   short statement of its own (no transaction around the run): a batch holds locks, and on
 *   PGlite the one connection, only briefly, and the run yields between batches so that
 *   ingestion requests waiting behind it run first.
 */
export function createRetentionService(deps: {
  db: DbTx;
  logger: RetentionLogger;
  batchSize: number;
  /** Least pause between two batches, which is never shorter than the batch before it; 0 only yields to the event loop. */
  pauseMs: number;
  /** The clock, so that tests can move time. */
  now?: () => Date;
  /** How the run waits between batches, so that tests can see its pauses. */
  sleep?: (ms: number) => Promise<void>;
}) {
  const { db, logger, batchSize, pauseMs } = deps;
  const now = deps.now ?? (() => new Date());

  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const yieldNow = () => new Promise<void>((resolve) => setImmediate(resolve));
  /**
   * The pause after work that took `workedMs`: `pauseMs`, and never shorter than twice the work,
   * so that the run deletes at most a third of the time. A batch's delete keeps a CPU of the
   * database busy: back to back with 50 ms pauses, a run beside steady ingest left the bench's
   * 2-CPU machine idle 0–11 % of the time (about 30 % once it ended), and the inserts' own short
   * locks (a table's extension) waited behind holders the scheduler had put aside. At half the
   * time, the inserts' longest wait during a run was 13.2–17.8 ms (5.8–7.4 without it) and they were
   * answered 83 batches a second of 100; at a third, 10.9 ms and 89 a second, the run 156 s long
   * instead of 110 (3.3 million expired logs). Retention is background work; ingest is not. 0 only
   * yields (tests, or a run to finish fast).
   */
  const pause = (workedMs: number) => (pauseMs > 0 ? sleep(Math.max(pauseMs, Math.round(2 * workedMs))) : yieldNow());

  /**
   * Runs `attempt` again after a pause while a lock is not granted in time (55P03), up to
   * LOCK_ATTEMPTS times (fewer once stopped); answers what it answered, or BUSY when every attempt
   * timed out.
   */
  async function retriedOnLockTimeout<T>(signal: StopSignal, attempt: () => Promise<T>): Promise<T | typeof BUSY> {
    for (let tries = 1; ; tries++) {
      try {
        return await attempt();
      } catch (error) {
        if (sqlState(error) !== '55P03') throw error;
        if (tries >= LOCK_ATTEMPTS || signal.aborted) return BUSY;
        await sleep(LOCK_RETRY_PAUSE_MS);
      }
    }
  }

  /** `statement` in a transaction that waits at most `timeoutMs` for each lock, retried (retriedOnLockTimeout). */
  function underLockTimeout<T>(timeoutMs: number, signal: StopSignal, statement: (tx: DbTx) => Promise<T>): Promise<T | typeof BUSY> {
    return retriedOnLockTimeout(signal, () =>
      withTransaction(db, async (tx) => {
        await repo.setLockTimeout(tx, timeoutMs);
        return statement(tx);
      }),
    );
  }

  /**
   * Empties a partition whose logs have all expired, with their rollup buckets (see
   * repo.emptyPartition). Answers how many logs went, or 'kept' and 'busy' when it did nothing.
   */
  async function empty(partition: DailyPartition, keeping: number[], expired: number[], signal: StopSignal): Promise<number | 'kept' | 'busy'> {
    // Counted before the lock, so that reads are not kept waiting by the count.
    const counted = await repo.countPartition(db, partition);
    const done = await underLockTimeout(TRUNCATE_LOCK_TIMEOUT_MS, signal, (tx) => repo.emptyPartition(tx, partition, keeping, expired));
    if (done === BUSY) return 'busy';
    return done ? counted : 'kept';
  }

  /**
   * Drops an empty partition: detaches it, then drops the table it became. Every lock the detach
   * needs is taken first, each waiting DROP_LOCK_TIMEOUT_MS at most: the partition's, whose lock
   * keeps inserts out of it while it is checked empty, then the default partition's (`fallback`,
   * whose bounds it widens; nobody writes today's logs there), then the logs table's, last, so
   * that inserts wait behind it no longer than one timeout and the detach itself, and never while
   * it waits on something else (a vacuum of the partition, a read of the default one), while it
   * checks the day, nor on this process: locks, check and detach are one statement. The drop,
   * whose commit scans the shared buffers, locks the detached table alone
   * (repo.detachEmptyPartition).
   */
  async function drop(partition: DailyPartition, fallback: string | undefined, signal: StopSignal): Promise<boolean> {
    const detached = await retriedOnLockTimeout(signal, () => repo.detachEmptyPartition(db, partition, fallback, DROP_LOCK_TIMEOUT_MS));
    if (detached !== true) return false;
    await repo.dropDetached(db, partition.name);
    return true;
  }

  /**
   * The partition pass: empties every daily partition none of whose logs is still kept, and drops
   * the empty ones whose day has expired for every project.
   */
  async function partitionPass(cutoffs: { id: number; cutoff: Date }[], signal: StopSignal) {
    const result = { deleted: 0, emptied: 0, dropped: 0 };
    // A day detached by a run that stopped before dropping it.
    for (const name of await repo.detachedPartitions(db)) {
      await repo.dropDetached(db, name);
      result.dropped += 1;
      logger.info({ partition: name }, 'retention: expired day dropped, detached by an earlier run');
    }
    if (cutoffs.length === 0) return result;
    const latest = Math.max(...cutoffs.map((p) => p.cutoff.getTime()));
    const earliest = Math.min(...cutoffs.map((p) => p.cutoff.getTime()));
    const fallback = await repo.defaultPartition(db);
    for (const partition of await repo.dailyPartitions(db)) {
      if (signal.aborted || partition.to.getTime() > latest) break;
      // Projects whose retention still covers this day: a log of one of them keeps the partition.
      const keeping = cutoffs.filter((p) => p.cutoff.getTime() < partition.to.getTime()).map((p) => p.id);
      const expired = cutoffs.filter((p) => p.cutoff.getTime() >= partition.to.getTime()).map((p) => p.id);
      const found = await repo.partitionOccupancy(db, partition, keeping);
      if (found.held) continue;
      const from = performance.now();
      if (found.occupied) {
        const gone = await empty(partition, keeping, expired, signal);
        if (gone === 'kept') continue;
        if (gone === 'busy') {
          logger.info({ partition: partition.name }, 'retention: partition busy, its logs go row by row');
          continue;
        }
        result.deleted += gone;
        result.emptied += 1;
        logger.info({ partition: partition.name, deleted: gone }, 'retention: expired day emptied');
      }
      if (partition.to.getTime() <= earliest) {
        if (await drop(partition, fallback, signal)) {
          result.dropped += 1;
          logger.info({ partition: partition.name }, 'retention: expired day dropped');
        }
      }
      // After a truncate or a drop (each also scans the shared buffers), the pause; else a yield.
      await (found.occupied || partition.to.getTime() <= earliest ? pause(performance.now() - from) : yieldNow());
    }
    return result;
  }

  return {
    /** One run over every project; once `signal` is aborted, it ends after its current batch. */
    async run(signal: StopSignal): Promise<RetentionResult> {
      const started = Date.now();
      const all = await repo.projectRetentions(db);
      // The cutoffs are fixed at the start of the run: logs that expire meanwhile wait for the next
      // run instead of keeping this one going.
      const at = now();
      const cutoffs = all.map((p) => ({ id: p.id, cutoff: expiryCutoff(at, p.retentionDays) }));
      const partitions = await partitionPass(cutoffs, signal);
      let deleted = partitions.deleted;
      let batches = 0;
      let examined = 0;
      for (const project of cutoffs) {
        if (signal.aborted) break;
        examined += 1;
        let forProject = 0;
        let workedMs: number;
        for (;;) {
          const from = performance.now();
          const batch = await repo.deleteExpiredBatch(db, project.id, project.cutoff, batchSize);
          workedMs = performance.now() - from;
          batches += 1;
          forProject += batch.deleted;
          if (!batch.more || signal.aborted) break;
          await pause(workedMs);
        }
        // The pattern tags of expired logs go with them, whichever way the logs went.
        const tagsFrom = performance.now();
        await deleteExpiredTags(db, project.id, project.cutoff);
        workedMs = Math.max(workedMs, performance.now() - tagsFrom);
        if (forProject > 0) {
          logger.info({ projectId: project.id, deleted: forProject, cutoff: project.cutoff.toISOString() }, 'retention: expired logs deleted');
        }
        deleted += forProject;
        // Between projects too: after a delete, the pause; after a mere look, a yield, so that many
        // projects with nothing to delete neither add up to a stall nor make the run crawl.
        await (forProject > 0 ? pause(workedMs) : yieldNow());
      }
      const result = {
        deleted,
        projects: examined,
        batches,
        partitionsEmptied: partitions.emptied,
        partitionsDropped: partitions.dropped,
      };
      logger.info({ ...result, durationMs: Date.now() - started }, 'retention run finished');
      return result;
    },
  };
}

export type RetentionService = ReturnType<typeof createRetentionService>;
