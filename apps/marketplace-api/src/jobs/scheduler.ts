import type { FastifyInstance } from 'fastify';
import type { LifecycleTimersService, TimersResult } from '../modules/booking/index.js';

/**
 * Runs the lifecycle timers (request and offer expiry, auto-completion) when the app is ready and
 * then every `intervalSeconds` (0: never; a cron running `node dist/cli/timers.js` may do it
 * instead). Several instances may each run it: the timers claim their rows, so none is moved twice.
 */
export function registerLifecycleTimers(app: FastifyInstance, deps: { timers: LifecycleTimersService; intervalSeconds: number }) {
  const intervalMs = deps.intervalSeconds * 1000;
  let running: Promise<TimersResult> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  /** One pass; a pass asked for while one runs joins it. */
  const runOnce = () => {
    running ??= app.metrics.job('lifecycle_timers', () => deps.timers.run()).finally(() => {
      running = undefined;
    });
    return running;
  };

  const tick = () => {
    runOnce()
      .then((moved) => {
        const count = Object.values(moved)
          .flatMap((part: Record<string, number[]>) => Object.values(part))
          .reduce((n, ids) => n + ids.length, 0);
        if (count > 0) app.log.info({ moved }, 'lifecycle timers moved rows');
      })
      .catch((error: unknown) => app.log.error({ err: error }, 'lifecycle timers failed'))
      .finally(() => {
        if (!stopped) {
          timer = setTimeout(tick, intervalMs);
          timer.unref();
        }
      });
  };
  if (intervalMs > 0) app.addHook('onReady', async () => tick());
  // preClose, not onClose: the app's onClose hooks close the database, and a pass in flight
  // must finish on it first.
  app.addHook('preClose', async () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    await running?.catch(() => undefined);
  });
  return { runOnce };
}
