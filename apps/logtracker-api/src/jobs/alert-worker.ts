import type { FastifyBaseLogger } from 'fastify';
import type { DbTx } from '../db/index.js';
import type { AlertDelivery } from '../db/schema/index.js';
import type { Mailer } from '../integrations/mail/index.js';
import { alertEmail, describeError, postWebhook, webhookBody } from '../modules/alerts/alerts.delivery.js';
import * as repo from '../modules/alerts/alerts.repository.js';
import type { WebhookGuard } from '../modules/alerts/webhook-target.js';

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
}

export interface WorkerRun {
  claimed: number;
  delivered: number;
  retried: number;
  failed: number;
}

const RETRY_BASE_MS = 30_000;
const RETRY_CAP_MS = 60 * 60_000;

/**
 * The pause before the next attempt after `attempts` failed ones: 30 s, 1 min, 2 min, … capped at
 * an hour, each ±20 % so that the deliveries of one outage do not all return in the same second.
 */
export function retryDelayMs(attempts: number, random: () => number = Math.random) {
  const base = Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** Math.max(0, attempts - 1));
  return Math.round(base * (0.8 + random() * 0.4));
}

/**
 * Sends pending alert deliveries (webhook, e-mail) in the background, with retries and backoff.
 * `start` polls every `intervalMs`; `runOnce` makes one pass (tests drive it directly). Passes never
 * overlap within a process; instances share the work through `claimDue`.
 */
export function createAlertWorker(options: AlertWorkerOptions) {
  const { db, mailer, log, maxAttempts, webhookTimeoutMs } = options;
  const batchSize = options.batchSize ?? 20;
  const concurrency = options.concurrency ?? 10;
  // A claimed row is left alone for this long; it must outlast a whole pass (two rounds of sends,
  // each bounded by the webhook timeout or the SMTP timeouts of under a minute), or another
  // instance would send the same delivery again while this one is still at it.
  const leaseSeconds = 300 + Math.ceil((2 * webhookTimeoutMs) / 1000);

  async function send(delivery: AlertDelivery, context: Awaited<ReturnType<typeof repo.alertsWithProjects>>[number]) {
    const { alert, project } = context;
    if (delivery.channel === 'webhook') {
      await postWebhook({
        url: delivery.target,
        secret: project.webhookSecret,
        body: webhookBody(alert, project),
        deliveryId: delivery.id,
        timeoutMs: webhookTimeoutMs,
        guard: options.webhookGuard,
      });
    } else {
      await mailer.send(alertEmail(alert, project, delivery.target));
    }
  }

  async function runBatch(): Promise<WorkerRun> {
    const run: WorkerRun = { claimed: 0, delivered: 0, retried: 0, failed: 0 };
    const claimed = await repo.claimDue(db, batchSize, leaseSeconds);
    run.claimed = claimed.length;
    if (claimed.length === 0) return run;
    const contexts = await repo.alertsWithProjects(db, [...new Set(claimed.map((d) => d.alertId))]);
    const byAlert = new Map(contexts.map((c) => [c.alert.id, c]));

    const queue = [...claimed];
    const lane = async () => {
      for (let delivery = queue.shift(); delivery; delivery = queue.shift()) {
        // One delivery's trouble (even with the database) must not stop the others of the pass.
        try {
          await attempt(delivery, run);
        } catch (error) {
          log.error({ err: error, deliveryId: delivery.id }, 'alert delivery could not be recorded');
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, claimed.length) }, lane));
    return run;

    async function attempt(delivery: AlertDelivery, tally: WorkerRun) {
      const context = byAlert.get(delivery.alertId);
      // Gone between the claim and the read: the project (and with it the delivery) was deleted.
      if (!context) return;
      let failure: string | null = null;
      try {
        await send(delivery, context);
      } catch (error) {
        failure = describeError(error, webhookTimeoutMs);
      }
      if (failure === null) {
        if (await repo.markDelivered(db, delivery.id, delivery.attempts)) tally.delivered++;
        return;
      }
      // `attempts` already counts this one: the claim counted it.
      const retryInMs = delivery.attempts >= maxAttempts ? null : retryDelayMs(delivery.attempts);
      if (await repo.markAttemptFailed(db, delivery.id, delivery.attempts, failure, retryInMs)) {
        if (retryInMs === null) tally.failed++;
        else tally.retried++;
      }
      log.warn(
        { deliveryId: delivery.id, alertId: delivery.alertId, channel: delivery.channel, attempts: delivery.attempts, error: failure },
        retryInMs === null ? 'alert delivery failed for good' : 'alert delivery failed; will retry',
      );
    }
  }

  let tail: Promise<unknown> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  let started = false;

  /** One pass over the due deliveries; waits for a pass already running instead of overlapping it. */
  function runOnce(): Promise<WorkerRun> {
    const run = tail.then(runBatch);
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
