import type { Metrics } from '@repo/http';
import { onceAcrossInstances, type Exclusive } from '@repo/db';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import type { DbTx } from '../db/index.js';
import { createMaintenanceService, type MaintenanceResult } from '../modules/maintenance/index.js';
import type { JobLogger } from './retention.js';

/** Runs the log storage upkeep (see createMaintenanceService) once or on a schedule. */
export function createMaintenanceJob(deps: {
  db: DbTx;
  logger: JobLogger;
  now?: () => Date;
  /** Keeps passes of several instances from overlapping (the database's `exclusive`); none on one process. */
  exclusive?: Exclusive;
  /** Counts and times each pass (the app's metrics); passes run untimed without it (CLI, tests). */
  metrics?: Pick<Metrics, 'job'>;
}) {
  const maintenance = createMaintenanceService(deps);
  let running: Promise<MaintenanceResult> | undefined;

  return {
    ensurePartitions: maintenance.ensurePartitions,
    /** One pass; a pass asked for while one runs joins it. */
    runOnce(): Promise<MaintenanceResult> {
      const pass = () =>
        onceAcrossInstances(deps.exclusive, 'logtracker:maintenance', maintenance.run, () => ({
          partitionsCreated: 0,
          rollupRowsCompacted: 0,
          skipped: true as const,
        }));
      running ??= (deps.metrics ? deps.metrics.job('maintenance', pass) : pass()).finally(() => {
        running = undefined;
      });
      return running;
    },
    /**
     * The rollup rows appended since the last merge, merged alone (after ingest: the statistics
     * keeper); answers how many rows fewer the rollups hold. A pass under way here merges them
     * itself, and one under way on another instance is left to.
     */
    mergeFreshRollups(): Promise<number> {
      if (running) return running.then((pass) => pass.rollupRowsCompacted);
      const merge = () => onceAcrossInstances(deps.exclusive, 'logtracker:maintenance', maintenance.mergeFreshRollups, () => 0);
      return deps.metrics ? deps.metrics.job('rollup_merge', merge) : merge();
    },
  };
}

export type MaintenanceJob = ReturnType<typeof createMaintenanceJob>;

/** Runs maintenance when the app is ready and then every `intervalSeconds` (0: never). */
export function registerMaintenance(app: FastifyInstance, deps: { config: Readonly<Config>; db: DbTx; exclusive?: Exclusive }) {
  const job = createMaintenanceJob({ db: deps.db, logger: app.log, exclusive: deps.exclusive, metrics: app.metrics });
  const intervalMs = deps.config.maintenanceIntervalSeconds * 1000;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const tick = () => {
    job
      .runOnce()
      .catch((error: unknown) => app.log.error({ err: error }, 'log storage maintenance failed'))
      .finally(() => {
        if (!stopped) {
          timer = setTimeout(tick, intervalMs);
          timer.unref();
        }
      });
  };
  if (intervalMs > 0) app.addHook('onReady', async () => tick());
  app.addHook('onClose', async () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  });
  return job;
}
