import { queryRows, sqlState, timestamptz, withTransaction } from '@repo/db';
import { asc, sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import type { DbTx } from '../db/index.js';
import { projects } from '../db/schema/index.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** The part of a pino/Fastify logger the job writes to. */
export interface JobLogger {
  info(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
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
 * How long the job waits for a table lock before giving up on it for this attempt. Emptying a
 * partition locks that partition only (ingestion writes to today's, never blocked); a read of the
 * whole project waits behind it at most this long. Dropping one locks the logs table itself, so
 * every statement on logs, inserts included, waits behind it at most DROP_LOCK_TIMEOUT_MS.
 */
const TRUNCATE_LOCK_TIMEOUT_MS = 200;
const DROP_LOCK_TIMEOUT_MS = 5;
/** Attempts at a lock within one run, a pause apart; what is left goes at the next run. */
const LOCK_ATTEMPTS = 20;
const LOCK_RETRY_PAUSE_MS = 100;
const BUSY = Symbol('lock not granted');

interface DailyPartition {
  name: string;
  from: Date;
  to: Date;
}

/**
 * Deletes logs older than each project's `retention_days` (see expiryCutoff), without pausing
 * ingestion:
 * - a daily partition whose logs have all expired is emptied with TRUNCATE, which locks that
 *   partition alone, and its counts leave the rollups in the same transaction; once its day has
 *   expired for every project, the empty partition is dropped under a lock timeout of a few
 *   milliseconds, retried, and left for the next run if the logs table stays busy;
 * - the other expired logs (a project keeping its logs less long than its neighbours in a
 *   partition, logs in the default partition) are deleted a bounded batch at a time, each batch a
 *   short statement of its own (no transaction around the run): a batch holds locks, and on
 *   PGlite the one connection, only briefly, and the job yields between batches so that
 *   ingestion requests waiting behind it run first.
 * A run never overlaps another: a run asked for while one is in flight joins it.
 */
export function createRetentionJob(deps: {
  db: DbTx;
  logger: JobLogger;
  batchSize: number;
  /** Pause between two batches; 0 still yields to the event loop. */
  pauseMs: number;
  /** The clock, so that tests can move time. */
  now?: () => Date;
}) {
  const { db, logger, batchSize, pauseMs } = deps;
  const now = deps.now ?? (() => new Date());
  let running: Promise<RetentionResult> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let scheduled = false;
  // Set by stop(): a run in flight ends after its current batch instead of delaying shutdown.
  let stopping = false;

  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
  const yieldNow = () => new Promise<void>((resolve) => setImmediate(resolve));
  const pause = () => (pauseMs > 0 ? sleep(pauseMs) : yieldNow());

  /**
   * One batch: the project's oldest expired logs, at most `batchSize` of them, bounded by time
   * rather than by ids, so that the delete reads the (project, timestamp) index of the partitions
   * before the bound only. (Deleting `where id in (select … limit n)` joined the ids to every
   * expired partition, reading millions of rows per batch.) The bound is the instant of the
   * (batchSize + 1)-th oldest expired log; a run of more than a batch of logs sharing one instant
   * goes whole. Answers how many went and whether expired logs are left.
   */
  async function deleteBatch(projectId: number, cutoff: Date) {
    const [row] = await queryRows<{ deleted: number | string; more: boolean }>(
      db,
      sql`with edge as (
            select "timestamp" as t from logs where project_id = ${projectId} and "timestamp" < ${timestamptz(cutoff)}
             order by "timestamp" asc nulls first offset ${batchSize} limit 1
          ), bound as (
            select case
                     when e.t is null then ${timestamptz(cutoff)}
                     when exists (select 1 from logs where project_id = ${projectId} and "timestamp" < e.t) then e.t
                     else e.t + interval '1 microsecond'
                   end as b
              from (select (select t from edge) as t) as e
          ), gone as (
            delete from logs
             where project_id = ${projectId} and "timestamp" < ${timestamptz(cutoff)} and "timestamp" < (select b from bound)
            returning 1
          )
          select (select count(*) from gone) as deleted, exists (select 1 from edge) as more`,
    );
    return { deleted: Number(row?.deleted ?? 0), more: row?.more === true };
  }

  /** The daily partitions (logs_pYYYYMMDD, one UTC day each), oldest first. */
  async function dailyPartitions(): Promise<DailyPartition[]> {
    const found = await queryRows<{ name: string }>(
      db,
      sql`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
           where i.inhparent = 'logs'::regclass and c.relname ~ '^logs_p[0-9]{8}$' order by c.relname`,
    );
    return found.map(({ name }) => {
      const from = new Date(`${name.slice(6, 10)}-${name.slice(10, 12)}-${name.slice(12, 14)}T00:00:00Z`);
      return { name, from, to: new Date(from.getTime() + DAY_MS) };
    });
  }

  /**
   * Runs `statement` in a transaction that waits at most `timeoutMs` for its locks, again after a
   * pause while a lock is not granted, up to LOCK_ATTEMPTS times; answers what it answered, or
   * BUSY when every attempt timed out.
   */
  async function underLockTimeout<T>(timeoutMs: number, statement: (tx: DbTx) => Promise<T>): Promise<T | typeof BUSY> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await withTransaction(db, async (tx) => {
          await tx.execute(sql`select set_config('lock_timeout', ${`${timeoutMs}ms`}, true)`);
          return statement(tx);
        });
      } catch (error) {
        if (sqlState(error) !== '55P03') throw error;
        if (attempt >= LOCK_ATTEMPTS || stopping) return BUSY;
        await sleep(LOCK_RETRY_PAUSE_MS);
      }
    }
  }

  /** `project_id = any(…)` of a list of project ids, as one array parameter. */
  const anyOf = (ids: number[]) => sql`project_id = any(${`{${ids.join(',')}}`}::int[])`;

  /**
   * Empties a partition whose logs have all expired: TRUNCATE, and its day's buckets out of the
   * rollups of the projects it may hold (every log of a day with a partition is in that
   * partition, and a bucket never spans two days). Under the partition's lock, it first checks
   * again that no project keeping the day has logged there since it was looked at. Answers how
   * many logs went, or 'kept' and 'busy' when it did nothing.
   */
  async function empty(partition: DailyPartition, keeping: number[], expired: number[]): Promise<number | 'kept' | 'busy'> {
    const table = sql.raw(`"${partition.name}"`);
    // Counted before the lock, so that reads are not kept waiting by the count.
    const [counted] = await queryRows<{ n: number | string }>(db, sql`select count(*) as n from ${table}`);
    const from = partition.from.toISOString();
    const to = partition.to.toISOString();
    const done = await underLockTimeout(TRUNCATE_LOCK_TIMEOUT_MS, async (tx) => {
      await tx.execute(sql`lock table ${table} in access exclusive mode`);
      const [row] = await queryRows<{ kept: boolean }>(tx, sql`select exists (select 1 from ${table} where ${anyOf(keeping)}) as kept`);
      if (row?.kept) return false;
      await tx.execute(sql`truncate ${table}`);
      for (const rollup of ['log_level_counts', 'log_source_counts']) {
        await tx.execute(
          sql`delete from ${sql.raw(rollup)}
               where ${anyOf(expired)} and grain in ('minute', 'hour', 'day')
                 and bucket >= ${from}::timestamptz and bucket < ${to}::timestamptz`,
        );
      }
      return true;
    });
    if (done === BUSY) return 'busy';
    return done ? Number(counted?.n ?? 0) : 'kept';
  }

  /**
   * Drops an empty partition. Every lock the drop needs is taken first, each waiting
   * DROP_LOCK_TIMEOUT_MS at most: the partition's and the default partition's (`fallback`, which a
   * drop also locks; nobody writes today's logs there), then the logs table's, last, so that inserts wait
   * behind it no longer than one timeout and the drop itself, and never while the drop waits on
   * something else (a vacuum of the partition, a read of the default one). No insert can reach the
   * partition between the check that it is empty and the drop, which follows at once.
   */
  async function drop(partition: DailyPartition, fallback: string | undefined): Promise<boolean> {
    const table = sql.raw(`"${partition.name}"`);
    const dropped = await underLockTimeout(DROP_LOCK_TIMEOUT_MS, async (tx) => {
      await tx.execute(sql`lock table ${table} in access exclusive mode`);
      if (fallback) await tx.execute(sql`lock table ${sql.raw(fallback)} in access exclusive mode`);
      await tx.execute(sql`lock table only logs in access exclusive mode`);
      const [row] = await queryRows<{ full: boolean }>(tx, sql`select exists (select 1 from ${table}) as full`);
      // Logs arrived for the day since it was emptied (a late backfill): they go first, next run.
      if (row?.full) return false;
      await tx.execute(sql`drop table ${table}`);
      return true;
    });
    return dropped === true;
  }

  /**
   * The partition pass: empties every daily partition none of whose logs is still kept, and drops
   * the empty ones whose day has expired for every project.
   */
  async function partitionPass(cutoffs: { id: number; cutoff: Date }[]) {
    const result = { deleted: 0, emptied: 0, dropped: 0 };
    if (cutoffs.length === 0) return result;
    const latest = Math.max(...cutoffs.map((p) => p.cutoff.getTime()));
    const earliest = Math.min(...cutoffs.map((p) => p.cutoff.getTime()));
    const [parent] = await queryRows<{ fallback: string | null }>(
      db,
      sql`select nullif(partdefid, 0)::regclass::text as fallback from pg_partitioned_table where partrelid = 'logs'::regclass`,
    );
    for (const partition of await dailyPartitions()) {
      if (stopping || partition.to.getTime() > latest) break;
      const table = sql.raw(`"${partition.name}"`);
      // Projects whose retention still covers this day: a log of one of them keeps the partition.
      const keeping = cutoffs.filter((p) => p.cutoff.getTime() < partition.to.getTime()).map((p) => p.id);
      const expired = cutoffs.filter((p) => p.cutoff.getTime() >= partition.to.getTime()).map((p) => p.id);
      const [found] = await queryRows<{ held: boolean; occupied: boolean }>(
        db,
        sql`select exists (select 1 from ${table} where ${anyOf(keeping)}) as held, exists (select 1 from ${table}) as occupied`,
      );
      if (found?.held) continue;
      if (found?.occupied) {
        const gone = await empty(partition, keeping, expired);
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
        if (await drop(partition, parent?.fallback ?? undefined)) {
          result.dropped += 1;
          logger.info({ partition: partition.name }, 'retention: expired day dropped');
        }
      }
      await yieldNow();
    }
    return result;
  }

  async function run(): Promise<RetentionResult> {
    const started = Date.now();
    const all = await db
      .select({ id: projects.id, retentionDays: projects.retentionDays })
      .from(projects)
      .orderBy(asc(projects.id));
    // The cutoffs are fixed at the start of the run: logs that expire meanwhile wait for the next
    // run instead of keeping this one going.
    const at = now();
    const cutoffs = all.map((p) => ({ id: p.id, cutoff: expiryCutoff(at, p.retentionDays) }));
    const partitions = await partitionPass(cutoffs);
    let deleted = partitions.deleted;
    let batches = 0;
    let examined = 0;
    for (const project of cutoffs) {
      if (stopping) break;
      examined += 1;
      let forProject = 0;
      for (;;) {
        const batch = await deleteBatch(project.id, project.cutoff);
        batches += 1;
        forProject += batch.deleted;
        if (!batch.more || stopping) break;
        await pause();
      }
      if (forProject > 0) {
        logger.info({ projectId: project.id, deleted: forProject, cutoff: project.cutoff.toISOString() }, 'retention: expired logs deleted');
      }
      deleted += forProject;
      // Between projects too: after a delete, the pause; after a mere look, a yield, so that many
      // projects with nothing to delete neither add up to a stall nor make the run crawl.
      await (forProject > 0 ? pause() : yieldNow());
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
  }

  function runOnce(): Promise<RetentionResult> {
    if (!running) {
      stopping = false;
      running = run().finally(() => {
        running = undefined;
      });
    }
    return running;
  }

  function schedule(intervalMs: number, delayMs: number) {
    timer = setTimeout(() => {
      timer = undefined;
      runOnce()
        .catch((error: unknown) => logger.error({ err: error }, 'retention run failed; retrying at the next interval'))
        .finally(() => {
          // The next run is counted from the end of this one, so runs never pile up.
          if (scheduled) schedule(intervalMs, intervalMs);
        });
    }, delayMs);
    // A pending run must not keep a process alive that is otherwise done.
    timer.unref();
  }

  return {
    runOnce,
    /** Runs now, then `intervalMs` after each run ends. */
    start(intervalMs: number) {
      if (scheduled) return;
      scheduled = true;
      stopping = false;
      schedule(intervalMs, 0);
    },
    /**
     * Cancels the schedule and ends a run in flight after its current batch, waiting for it so
     * that the database can close after it. What is left goes at the next start.
     */
    async stop() {
      scheduled = false;
      stopping = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await running?.catch(() => undefined);
    },
  };
}

export type RetentionJob = ReturnType<typeof createRetentionJob>;

/**
 * The in-app schedule: the first run when the app is ready, then every interval; stopped (a run in
 * flight ends after its batch) before the database closes. Off when the interval is 0, where a
 * CronJob runs the CLI instead (several instances, or a PGlite data directory the CLI cannot share).
 */
export function registerRetention(app: FastifyInstance, deps: { config: Readonly<Config>; db: DbTx }) {
  const { intervalMinutes, batchSize, pauseMs } = deps.config.retention;
  if (intervalMinutes === 0) return;
  const job = createRetentionJob({ db: deps.db, logger: app.log.child({ job: 'retention' }), batchSize, pauseMs });
  app.addHook('onReady', async () => job.start(intervalMinutes * 60_000));
  // Root onClose hooks run last-added first: this one before the database (opened earlier) closes.
  app.addHook('onClose', () => job.stop());
}
