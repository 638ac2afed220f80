import { and, asc, eq, inArray, lt } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import type { DbTx } from '../db/index.js';
import { logs, oldestFirst, projects } from '../db/schema/index.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** The part of a pino/Fastify logger the job writes to. */
export interface JobLogger {
  info(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface RetentionResult {
  /** Logs deleted in this run, across every project. */
  deleted: number;
  /** Projects examined. */
  projects: number;
  /** Delete statements run: at least one per project. */
  batches: number;
}

/**
 * Deletes logs older than each project's `retention_days`, a bounded batch at a time. Each batch
 * is one short statement of its own (no transaction around the run): a batch holds locks, and on
 * PGlite the one connection, only briefly, and the job yields between batches so that ingestion
 * requests waiting behind it run first. A run never overlaps another: a run asked for while one
 * is in flight joins it.
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

  const yieldNow = () => new Promise<void>((resolve) => setImmediate(resolve));
  const pause = () => (pauseMs > 0 ? new Promise<void>((resolve) => setTimeout(resolve, pauseMs)) : yieldNow());

  /** One batch: at most `batchSize` of the project's oldest expired logs; answers how many went. */
  async function deleteBatch(projectId: number, cutoff: Date) {
    const oldest = db
      .select({ id: logs.id })
      .from(logs)
      .where(and(eq(logs.projectId, projectId), lt(logs.timestamp, cutoff)))
      .orderBy(oldestFirst[0])
      .limit(batchSize);
    // The outer bound on the timestamp lets PostgreSQL skip every partition that cannot hold one.
    const deleted = await db
      .delete(logs)
      .where(and(inArray(logs.id, oldest), lt(logs.timestamp, cutoff)))
      .returning({ id: logs.id });
    return deleted.length;
  }

  async function run(): Promise<RetentionResult> {
    const started = Date.now();
    const all = await db
      .select({ id: projects.id, retentionDays: projects.retentionDays })
      .from(projects)
      .orderBy(asc(projects.id));
    let deleted = 0;
    let batches = 0;
    let examined = 0;
    for (const project of all) {
      examined += 1;
      // The cutoff is fixed per project at the start of its pass: logs that expire meanwhile wait
      // for the next run instead of keeping this one going.
      const cutoff = new Date(now().getTime() - project.retentionDays * DAY_MS);
      let forProject = 0;
      for (;;) {
        const n = await deleteBatch(project.id, cutoff);
        batches += 1;
        forProject += n;
        if (n < batchSize || stopping) break;
        await pause();
      }
      if (forProject > 0) {
        logger.info({ projectId: project.id, deleted: forProject, cutoff: cutoff.toISOString() }, 'retention: expired logs deleted');
      }
      deleted += forProject;
      if (stopping) break;
      // Between projects too: after a delete, the pause; after a mere look, a yield, so that many
      // projects with nothing to delete neither add up to a stall nor make the run crawl.
      await (forProject > 0 ? pause() : yieldNow());
    }
    const result = { deleted, projects: examined, batches };
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
