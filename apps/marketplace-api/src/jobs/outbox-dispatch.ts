import type { FastifyInstance } from 'fastify';
import type { DbTx } from '../db/index.js';
import { createOutboxDispatcher, type OutboxConsumer } from '../modules/outbox/index.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Delivers the outbox to its consumers now (tests, and the timer below); a call while one runs joins it. */
    outboxDispatch: { drain(): Promise<Record<string, number>> };
  }
}

/**
 * Delivers the outbox of domain events to the consumers the modules registered, when the app is
 * ready and then every `intervalMs` (0: only when asked). Several instances may run it at once:
 * each consumer's batches go to one of them (see createOutboxDispatcher).
 */
export function registerOutboxDispatch(app: FastifyInstance, deps: { db: DbTx; consumers: OutboxConsumer[]; intervalMs: number }) {
  const dispatcher = createOutboxDispatcher({ db: deps.db, consumers: deps.consumers });
  let running: Promise<Record<string, number>> | undefined;
  const drain = () => {
    running ??= app.metrics.job('outbox_dispatch', () => dispatcher.drain()).finally(() => {
      running = undefined;
    });
    return running;
  };
  app.decorate('outboxDispatch', { drain });
  // The outbox lag, measured when Prometheus scrapes; a failed read drops the series rather than
  // showing a stale age.
  app.metrics.gauge({
    name: 'marketplace_outbox_lag_seconds',
    help: 'Age of the oldest domain event a consumer of the outbox has not delivered yet (0: up to date), by consumer',
    labelNames: ['consumer'] as const,
    async collect() {
      this.reset();
      try {
        for (const { consumer, seconds } of await dispatcher.lag()) this.set({ consumer }, seconds);
      } catch (error) {
        app.log.warn({ err: error }, 'outbox lag unavailable for the metrics');
      }
    },
  });

  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const tick = () => {
    drain()
      .catch((error: unknown) => app.log.error({ err: error }, 'outbox delivery failed'))
      .finally(() => {
        if (!stopped) {
          timer = setTimeout(tick, deps.intervalMs);
          timer.unref();
        }
      });
  };
  if (deps.intervalMs > 0 && deps.consumers.length > 0) app.addHook('onReady', async () => tick());
  app.addHook('onClose', async () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    await running?.catch(() => undefined);
  });
}
