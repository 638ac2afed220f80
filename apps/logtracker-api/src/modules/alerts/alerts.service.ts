import type { Actor } from '@repo/auth';
import { withTransaction } from '@repo/db';
import { pageMeta, pageOffset } from '@repo/http';
import type { FastifyBaseLogger } from 'fastify';
import type { DbTx } from '../../db/index.js';
import { DEFAULT_NOTIFICATION_SETTINGS, type AlertChannel, type LogLevel } from '../../db/schema/index.js';
import type { ProjectAccess } from '../projects/projects.service.js';
import * as repo from './alerts.repository.js';
import type { ListAlertsQuery } from './alerts.schemas.js';

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
