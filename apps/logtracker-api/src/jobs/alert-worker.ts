import type { Metrics } from '@repo/http';
import type { FastifyBaseLogger } from 'fastify';
import type { DbTx } from '../db/index.js';
import type { Mailer } from '../integrations/mail/index.js';
import { createAlertDeliveryService, type DeliveryPass, type WebhookGuard } from '../modules/alerts/index.js';

export interface AlertWorkerOptions {
  db: DbTx;
  mailer: Mailer;
  log: Pick<FastifyBaseLogger, 'error' | 'warn'>;
  /** Pause between polls for due deliveries. */
  intervalMs: number;
  /** Attempts per delivery before it is marked failed. */
  maxAttempts: number;
  webhookTimeoutMs: number;
  /** Checks each webhook URL at delivery and carries the request (see createWebhookGuard). */
  webhookGuard: WebhookGuard;
  /** Deliveries claimed per poll (default 20) and sent at once (default 10). */
  batchSize?: number;
  concurrency?: number;
  /** Counts and times each pass (the app's metrics); passes run untimed without it (CLI, tests). */
  metrics?: Pick<Metrics, 'job'>;
}

/**
 * Polls for due alert deliveries and sends them through the delivery service in the background.
 * `start` polls every `intervalMs`; `runOnce` makes one pass (tests drive it directly). Passes never
 * overlap within a process; instances share the work through the claims (see createAlertDeliveryService).
 */
export function createAlertWorker(options: AlertWorkerOptions) {
  const { log } = options;
  const batchSize = options.batchSize ?? 20;
  const deliveries = createAlertDeliveryService({ ...options, batchSize, concurrency: options.concurrency ?? 10 });

  let tail: Promise<unknown> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  let started = false;

  /** One pass over the due deliveries; waits for a pass already running instead of overlapping it. */
  function runOnce(): Promise<DeliveryPass> {
    const { metrics } = options;
    const run = tail.then(() => (metrics ? metrics.job('alert_delivery', deliveries.deliverDue) : deliveries.deliverDue()));
    tail = run.catch(() => undefined);
    return run;
  }

  async function tick() {
    try {
      // A full batch means more may be due: keep going until a pass comes back short.
      while (started && (await runOnce()).claimed === batchSize);
    } catch (error) {
      log.error({ err: error }, 'alert worker pass failed');
    } finally {
      if (started) schedule();
    }
  }

  function schedule() {
    timer = setTimeout(() => void tick(), options.intervalMs);
    // A pending poll never keeps the process alive on its own.
    timer.unref();
  }

  return {
    runOnce,
    start() {
      if (started) return;
      started = true;
      schedule();
    },
    /** Stops polling and waits for the pass in progress, so that the database can close after it. */
    async stop() {
      started = false;
      clearTimeout(timer);
      await tail;
    },
  };
}

export type AlertWorker = ReturnType<typeof createAlertWorker>;
