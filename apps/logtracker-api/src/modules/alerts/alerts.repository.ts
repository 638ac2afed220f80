import { and, asc, count, desc, eq, gt, inArray, isNull, lte, or, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import {
  alertDeliveries,
  alerts,
  logs,
  newestFirst,
  projects,
  type AlertChannel,
  type LogLevel,
} from '../../db/schema/index.js';

/** A window of minutes back from the database's clock (never the app's: instances' clocks differ). */
const minutesAgo = (minutes: number) => sql`now() - make_interval(mins => ${minutes}::int)`;

// Entries stamped slightly ahead of the server (client clock skew) still count; an entry dated far
// in the future (a typo, a bad clock) must not sit in every window until that date.
const FUTURE_TOLERANCE = sql`now() + interval '1 minute'`;

/**
 * What the evaluator needs of a project, and whether it is inside its quiet period: a cheap check
 * that spares the count during a storm. The conditional update in `claimQuietPeriod` decides.
 */
export async function findAlerting(db: DbTx, projectId: number) {
  const [row] = await db
    .select({
      id: projects.id,
      alertLevels: projects.alertLevels,
      settings: projects.notificationSettings,
      inQuietPeriod: sql<boolean>`coalesce(${projects.lastAlertAt} > now() - make_interval(mins => (${projects.notificationSettings}->>'quiet_period_minutes')::int), false)`,
    })
    .from(projects)
    .where(eq(projects.id, projectId))
    .limit(1);
  return row;
}

/** Logs at the given levels in the last `windowMinutes`: one count over `logs_project_level_time_idx`. */
export async function countRecent(db: DbTx, projectId: number, levels: LogLevel[], windowMinutes: number) {
  const [row] = await db
    .select({ n: count() })
    .from(logs)
    .where(
      and(
        eq(logs.projectId, projectId),
        inArray(logs.level, levels),
        gt(logs.timestamp, minutesAgo(windowMinutes)),
        lte(logs.timestamp, FUTURE_TOLERANCE),
      ),
    );
  return row?.n ?? 0;
}

/** The newest logs of the window at the given levels, for the alert's samples. */
export function recentSamples(db: DbTx, projectId: number, levels: LogLevel[], windowMinutes: number, limit: number) {
  return db
    .select({ id: logs.id, level: logs.level, message: logs.message, source: logs.source, timestamp: logs.timestamp })
    .from(logs)
    .where(
      and(
        eq(logs.projectId, projectId),
        inArray(logs.level, levels),
        gt(logs.timestamp, minutesAgo(windowMinutes)),
        lte(logs.timestamp, FUTURE_TOLERANCE),
      ),
    )
    .orderBy(...newestFirst)
    .limit(limit);
}

/**
 * Takes the project's quiet period: one conditional update, so that of any number of concurrent
 * evaluations (in this process or another instance) exactly one sees a row come back. On
 * PostgreSQL the loser waits for the winner's row lock, then re-checks the condition against the
 * committed `last_alert_at` and matches nothing.
 */
export async function claimQuietPeriod(tx: DbTx, projectId: number, quietMinutes: number) {
  const [row] = await tx
    .update(projects)
    .set({ lastAlertAt: sql`now()` })
    .where(
      and(
        eq(projects.id, projectId),
        or(isNull(projects.lastAlertAt), lte(projects.lastAlertAt, minutesAgo(quietMinutes))),
      ),
    )
    .returning({ id: projects.id });
  return row;
}

export async function insertAlert(
  tx: DbTx,
  values: {
    projectId: number;
    levels: LogLevel[];
    count: number;
    threshold: number;
    windowMinutes: number;
    samples: (typeof alerts.$inferInsert)['samples'];
  },
) {
  const [alert] = await tx
    .insert(alerts)
    .values({ ...values, windowStart: minutesAgo(values.windowMinutes), windowEnd: sql`now()` })
    .returning();
  if (!alert) throw new Error('insert returned no alert');
  return alert;
}

export async function insertDeliveries(tx: DbTx, alertId: number, targets: { channel: AlertChannel; target: string }[]) {
  if (targets.length === 0) return [];
  return tx
    .insert(alertDeliveries)
    .values(targets.map((t) => ({ alertId, channel: t.channel, target: t.target })))
    .returning();
}

export async function listAlerts(db: DbTx, projectId: number, limit: number, offset: number) {
  const [rows, totals] = await Promise.all([
    db
      .select()
      .from(alerts)
      .where(eq(alerts.projectId, projectId))
      .orderBy(desc(alerts.createdAt), desc(alerts.id))
      .limit(limit)
      .offset(offset),
    db.select({ n: count() }).from(alerts).where(eq(alerts.projectId, projectId)),
  ]);
  return { rows, total: totals[0]?.n ?? 0 };
}

export function deliveriesOf(db: DbTx, alertIds: number[]) {
  if (alertIds.length === 0) return Promise.resolve([]);
  return db
    .select()
    .from(alertDeliveries)
    .where(inArray(alertDeliveries.alertId, alertIds))
    .orderBy(asc(alertDeliveries.id));
}

// --- the delivery worker ---------------------------------------------------------------------

/**
 * Claims up to `limit` due deliveries in one statement: counts the attempt and leases the row by
 * moving `next_attempt_at` past the lease, then commits at once, so no transaction stays open
 * while the worker talks to the network (PGlite has one connection: an open transaction would
 * stall every request). `for update skip locked` lets several instances claim disjoint rows; a
 * worker that dies mid-send leaves a row that is due again when its lease ends.
 */
export function claimDue(db: DbTx, limit: number, leaseSeconds: number) {
  const due = db
    .select({ id: alertDeliveries.id })
    .from(alertDeliveries)
    .where(and(eq(alertDeliveries.status, 'pending'), lte(alertDeliveries.nextAttemptAt, sql`now()`)))
    .orderBy(asc(alertDeliveries.nextAttemptAt), asc(alertDeliveries.id))
    .limit(limit)
    .for('update', { skipLocked: true });
  return db
    .update(alertDeliveries)
    .set({
      attempts: sql`${alertDeliveries.attempts} + 1`,
      nextAttemptAt: sql`now() + make_interval(secs => ${leaseSeconds}::int)`,
    })
    .where(and(inArray(alertDeliveries.id, due), eq(alertDeliveries.status, 'pending')))
    .returning();
}

/** The alerts of claimed deliveries with what a message needs of their projects. */
export function alertsWithProjects(db: DbTx, alertIds: number[]) {
  if (alertIds.length === 0) return Promise.resolve([]);
  return db
    .select({
      alert: alerts,
      project: { id: projects.id, name: projects.name, webhookSecret: projects.webhookSecret },
    })
    .from(alerts)
    .innerJoin(projects, eq(projects.id, alerts.projectId))
    .where(inArray(alerts.id, alertIds));
}

// The outcome of an attempt applies only to the attempt that was claimed: if its lease ran out and
// another worker claimed the row again (attempts moved on), the late result is dropped.
const sameAttempt = (deliveryId: number, attempts: number) =>
  and(eq(alertDeliveries.id, deliveryId), eq(alertDeliveries.status, 'pending'), eq(alertDeliveries.attempts, attempts));

export async function markDelivered(db: DbTx, deliveryId: number, attempts: number) {
  const [row] = await db
    .update(alertDeliveries)
    .set({ status: 'delivered', deliveredAt: sql`now()` })
    .where(sameAttempt(deliveryId, attempts))
    .returning({ id: alertDeliveries.id });
  return row !== undefined;
}

/** A failed attempt: another try after `retryInMs`, or none (`null`) and the delivery is failed. */
export async function markAttemptFailed(db: DbTx, deliveryId: number, attempts: number, error: string, retryInMs: number | null) {
  const [row] = await db
    .update(alertDeliveries)
    .set(
      retryInMs === null
        ? { status: 'failed', lastError: error }
        : { lastError: error, nextAttemptAt: sql`now() + make_interval(secs => ${retryInMs / 1000}::float8)` },
    )
    .where(sameAttempt(deliveryId, attempts))
    .returning({ id: alertDeliveries.id });
  return row !== undefined;
}
