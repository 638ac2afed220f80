import type { FastifyInstance } from 'fastify';
import type { BatchOutcome, BroadcastsService } from '../modules/broadcasts/index.js';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The broadcasts job: `runOnce` sends one batch (null when nothing is left to claim), `drain`
     * sends batches until none is left and answers how many it sent (a call while one runs joins it).
     */
    broadcastDelivery: { runOnce(): Promise<BatchOutcome | null>; drain(): Promise<number> };
  }
}

/**
 * Sends queued broadcasts in batches when the app is ready and then every `intervalMs` (0: only
 * when asked). Several instances may run it at once: each batch is claimed with a row lock that
 * the others skip, and a restart resumes after the last committed batch.
 */
export function registerBroadcastDelivery(app: FastifyInstance, deps: { broadcasts: BroadcastsService; intervalMs: number }) {
  const runOnce = () => app.metrics.job('broadcasts', () => deps.broadcasts.deliverNext());
  let running: Promise<number> | undefined;
  let stopped = false;
  const drain = () => {
    running ??= (async () => {
      let batches = 0;
      // Stops between batches on shutdown; the cursor is committed after each one.
      while (!stopped && (await runOnce()) !== null) batches += 1;
      return batches;
    })().finally(() => {
      running = undefined;
    });
    return running;
  };
  app.decorate('broadcastDelivery', { runOnce, drain });

  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    drain()
      .then((batches) => {
        if (batches > 0) app.log.info({ batches }, 'broadcast batches sent');
      })
      .catch((error: unknown) => app.log.error({ err: error }, 'broadcast batch failed; retried on the next pass'))
      .finally(() => {
        if (!stopped) {
          timer = setTimeout(tick, deps.intervalMs);
          timer.unref();
        }
      });
  };
  if (deps.intervalMs > 0) app.addHook('onReady', async () => tick());
  // preClose: a batch in flight finishes on the database before onClose closes it.
  app.addHook('preClose', async () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    await running?.catch(() => undefined);
  });
}
