import type { Actor } from '@repo/auth';
import { withTransaction } from '@repo/db';
import { pageMeta, pageOffset } from '@repo/http';
import type { FastifyBaseLogger } from 'fastify';
import type { DbTx } from '../../db/index.js';
import { DEFAULT_NOTIFICATION_SETTINGS, type AlertChannel, type AlertDelivery, type LogLevel } from '../../db/schema/index.js';
import type { Mailer } from '../../integrations/mail/index.js';
import type { ProjectAccess } from '../projects/index.js';
import { alertEmail, describeError, postWebhook, webhookBody } from './alerts.delivery.js';
import * as repo from './alerts.repository.js';
import type { ListAlertsQuery } from './alerts.schemas.js';
import type { WebhookGuard } from './webhook-target.js';

export function createAlertsService(deps: { db: DbTx; access: ProjectAccess }) {
  const { db, access } = deps;
  return {
    /** A project's alerts, newest first, each with its deliveries. Members. */
    async list(actor: Actor, projectId: number, query: ListAlertsQuery) {
      await access.assertMember(actor, projectId);
      const { page, per_page } = query;
      const { rows, total } = await repo.listAlerts(db, projectId, per_page, pageOffset(page, per_page));
      const deliveries = await repo.deliveriesOf(
        db,
        rows.map((a) => a.id),
      );
      const byAlert = new Map<number, typeof deliveries>();
      for (const d of deliveries) byAlert.set(d.alertId, [...(byAlert.get(d.alertId) ?? []), d]);
      return { rows: rows.map((alert) => ({ alert, deliveries: byAlert.get(alert.id) ?? [] })), meta: pageMeta(page, per_page, total) };
    },
  };
}

export type AlertsService = ReturnType<typeof createAlertsService>;

const SAMPLE_COUNT = 5;
const SAMPLE_MESSAGE_MAX = 1000;

/**
 * Decides, after logs are stored, whether a project's threshold is crossed, and records the alert
 * and its pending deliveries. It runs beside ingestion, never inside it: the log bus calls
 * `onLevels` after commit and nothing waits for the evaluation, whose errors go to the log.
 *
 * Within this process a project has at most one evaluation in flight; logs arriving meanwhile
 * only mark it for one more pass, so a burst of batches costs one or two evaluations, not one per
 * batch. Across instances the database decides (see `claimQuietPeriod`).
 */
export function createAlertEvaluator(deps: { db: DbTx; log: Pick<FastifyBaseLogger, 'error'> }) {
  const { db, log } = deps;
  /** Per project in flight: the levels of logs that arrived since its current pass began. */
  const inFlight = new Map<number, { levels: Set<LogLevel>; done: Promise<void> }>();
  let stopped = false;

  /**
   * One evaluation. Answers the alert it recorded, or null. `newLevels` are the levels of the
   * logs that prompted it: logs below the alert levels never raise an alert, however many.
   */
  async function evaluate(projectId: number, newLevels: ReadonlySet<LogLevel>) {
    const project = await repo.findAlerting(db, projectId);
    if (!project) return null;
    const settings = { ...DEFAULT_NOTIFICATION_SETTINGS, ...project.settings };
    if (!settings.enabled || project.inQuietPeriod) return null;
    const levels = project.alertLevels;
    if (!levels.some((level) => newLevels.has(level))) return null;

    const { count: threshold, window_minutes: windowMinutes } = settings.threshold;
    const count = await repo.countRecent(db, projectId, levels, windowMinutes);
    if (count < threshold) return null;

    const targets: { channel: AlertChannel; target: string }[] = [
      ...(settings.webhook_url ? [{ channel: 'webhook' as const, target: settings.webhook_url }] : []),
      // One delivery per recipient: each address succeeds, fails and is retried on its own, so a
      // bouncing address neither re-sends to the others nor hides that they were reached.
      ...settings.email_recipients.map((to) => ({ channel: 'email' as const, target: to })),
    ];

    // The claim and the records share one transaction: an alert exists exactly when its quiet
    // period was taken, even if the insert fails half-way.
    return withTransaction(db, async (tx) => {
      if (!(await repo.claimQuietPeriod(tx, projectId, settings.quiet_period_minutes))) return null;
      const samples = await repo.recentSamples(tx, projectId, levels, windowMinutes, SAMPLE_COUNT);
      const alert = await repo.insertAlert(tx, {
        projectId,
        levels,
        count,
        threshold,
        windowMinutes,
        samples: samples.map((s) => ({
          id: s.id,
          level: s.level,
          message: s.message.length > SAMPLE_MESSAGE_MAX ? `${s.message.slice(0, SAMPLE_MESSAGE_MAX)}…` : s.message,
          source: s.source,
          timestamp: s.timestamp.toISOString(),
        })),
      });
      const deliveries = await repo.insertDeliveries(tx, alert.id, targets);
      return { alert, deliveries };
    });
  }

  async function drain(projectId: number, state: { levels: Set<LogLevel> }) {
    try {
      while (state.levels.size > 0 && !stopped) {
        const levels = state.levels;
        state.levels = new Set();
        try {
          await evaluate(projectId, levels);
        } catch (error) {
          log.error({ err: error, projectId }, 'alert evaluation failed');
        }
      }
    } finally {
      inFlight.delete(projectId);
    }
  }

  return {
    evaluate,

    /** The log bus listener: starts or extends the project's evaluation; never throws, never awaited. */
    onLevels(projectId: number, levels: ReadonlySet<LogLevel>) {
      if (stopped || levels.size === 0) return;
      const current = inFlight.get(projectId);
      if (current) {
        for (const level of levels) current.levels.add(level);
        return;
      }
      const state = { levels: new Set(levels), done: Promise.resolve() };
      inFlight.set(projectId, state);
      state.done = drain(projectId, state);
    },

    /**
     * Resolves once no evaluation is in flight. The log bus emits on a later tick, so this first
     * lets already-published logs reach `onLevels`. For shutdown and tests.
     */
    async settled() {
      await new Promise((resolve) => setImmediate(resolve));
      while (inFlight.size > 0) await Promise.all([...inFlight.values()].map((s) => s.done));
    },

    /** Takes no new work and waits for the evaluations in flight (before the database closes). */
    async stop() {
      stopped = true;
      while (inFlight.size > 0) await Promise.all([...inFlight.values()].map((s) => s.done));
    },
  };
}

export type AlertEvaluator = ReturnType<typeof createAlertEvaluator>;

// --- delivery ---------------------------------------------------------------------------------

/** What one pass over the due deliveries did. */
export interface DeliveryPass {
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
 * Sends pending alert deliveries (webhook, e-mail) and records each outcome, with retries and
 * backoff. Instances share the work through `claimDue`: each pass claims its own rows.
 */
export function createAlertDeliveryService(deps: {
  db: DbTx;
  mailer: Mailer;
  log: Pick<FastifyBaseLogger, 'error' | 'warn'>;
  /** Attempts per delivery before it is marked failed. */
  maxAttempts: number;
  webhookTimeoutMs: number;
  /** Checks each webhook URL at delivery and carries the request (see createWebhookGuard). */
  webhookGuard: WebhookGuard;
  /** Deliveries claimed per pass and sent at once. */
  batchSize: number;
  concurrency: number;
}) {
  const { db, mailer, log, maxAttempts, webhookTimeoutMs, batchSize, concurrency } = deps;
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
        guard: deps.webhookGuard,
      });
    } else {
      await mailer.send(alertEmail(alert, project, delivery.target));
    }
  }

  return {
    /** One pass: claims up to `batchSize` due deliveries, sends them `concurrency` at a time, records each outcome. */
    async deliverDue(): Promise<DeliveryPass> {
      const run: DeliveryPass = { claimed: 0, delivered: 0, retried: 0, failed: 0 };
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

      async function attempt(delivery: AlertDelivery, tally: DeliveryPass) {
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
    },
  };
}

export type AlertDeliveryService = ReturnType<typeof createAlertDeliveryService>;
