import type { FastifyInstance } from 'fastify';
import type { DbTx } from '../db/index.js';
import { createLogStatisticsService } from '../modules/maintenance/log-statistics.service.js';
import type { LogEvents } from '../modules/logs/log-events.js';

/** How soon after ingest the partitions' statistics are looked at, and how often while it goes on. */
const CHECK_INTERVAL_MS = 1_000;

/**
 * Refreshes the logs partitions' statistics after ingest (see createLogStatisticsService): any
 * stored batch arms a check a second later; while batches keep coming, one check a second. Idle,
 * it costs nothing.
 */
export function registerLogStatistics(app: FastifyInstance, deps: { db: DbTx; events: LogEvents }) {
  const statistics = createLogStatisticsService({ db: deps.db });
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let pending = false;
  let closed = false;

  const check = () => {
    timer = undefined;
    if (closed) return;
    pending = false;
    running = app.metrics
      .job('log_statistics', () => statistics.refresh())
      .catch((error: unknown) => app.log.warn({ err: error }, 'refreshing the logs statistics failed'))
      .finally(() => {
        running = undefined;
        // Batches stored during the check arm the next one.
        if (pending) arm();
      });
  };
  const arm = () => {
    if (timer || running || closed) {
      pending = true;
      return;
    }
    timer = setTimeout(check, CHECK_INTERVAL_MS);
    timer.unref();
  };

  const unsubscribe = deps.events.subscribeAll(() => arm());
  app.addHook('preClose', async () => {
    closed = true;
    unsubscribe();
    if (timer) clearTimeout(timer);
    await running;
  });
  return statistics;
}
