import type { Metrics } from '@repo/http';
import { onceAcrossInstances, type Exclusive } from '@repo/db';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import type { DbTx } from '../db/index.js';
import { createRetentionService, type RetentionResult } from '../modules/retention/index.js';

/** What a run skipped for another instance's reports. */
const NOTHING_DELETED = { deleted: 0, projects: 0, batches: 0, partitionsEmptied: 0, partitionsDropped: 0 };

/** The part of a pino/Fastify logger the job writes to. */
export interface JobLogger {
  info(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/**
 * Runs the retention service (see createRetentionService) once or on a schedule. A run never
 * overlaps another: a run asked for while one is in flight joins it.
 */
export function createRetentionJob(deps: {
  db: DbTx;
  logger: JobLogger;
  batchSize: number;
  /** Least pause between two batches, never shorter than the batch before it; 0 only yields to the event loop. */
  pauseMs: number;
  /** The clock, so that tests can move time. */
  now?: () => Date;
  /** How a run waits between batches, so that tests can see its pauses. */
  sleep?: (ms: number) => Promise<void>;
  /** Keeps runs of several instances from overlapping (the database's `exclusive`); none on one process. */
  exclusive?: Exclusive;
  /** Counts and times each pass (the app's metrics); passes run untimed without it (CLI, tests). */
  metrics?: Pick<Metrics, 'job'>;
}) {
  const { logger } = deps;
  const retention = createRetentionService(deps);
  let running: Promise<RetentionResult> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let scheduled = false;
  // Set by stop(): a run in flight ends after its current batch instead of delaying shutdown.
  let stopping = false;
  const signal = {
    get aborted() {
      return stopping;
    },
  };

  function runOnce(): Promise<RetentionResult> {
    if (!running) {
      stopping = false;
      const pass = () =>
        onceAcrossInstances(deps.exclusive, 'logtracker:retention', () => retention.run(signal), () => {
          logger.info({}, 'retention run skipped: another instance is running it');
          return { ...NOTHING_DELETED, skipped: true as const };
        });
      running = (deps.metrics ? deps.metrics.job('retention', pass) : pass()).finally(() => {
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
export function registerRetention(app: FastifyInstance, deps: { config: Readonly<Config>; db: DbTx; exclusive?: Exclusive }) {
  const { intervalMinutes, batchSize, pauseMs } = deps.config.retention;
  if (intervalMinutes === 0) return;
  const job = createRetentionJob({
    db: deps.db,
    logger: app.log.child({ job: 'retention' }),
    batchSize,
    pauseMs,
    exclusive: deps.exclusive,
    metrics: app.metrics,
  });
  app.addHook('onReady', async () => job.start(intervalMinutes * 60_000));
  // Root onClose hooks run last-added first: this one before the database (opened earlier) closes.
  app.addHook('onClose', () => job.stop());
}
