import { AppError } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import { APPOINTMENT_STATUSES, type AppointmentStatus } from '../../db/schema/index.js';
import type { Actor } from '../../lib/context.js';
import { localPeriod, type Period } from '../../lib/periods.js';
import * as repo from './stats.repository.js';
import type { DashboardQuery, StatsQuery } from './stats.schemas.js';

/** A prestataire's own figures over a period of its local days: requests, offers, conversion, revenue, appointments, rating. */
export function createPrestataireDashboardService(deps: { db: DbTx; now?: () => Date }) {
  const { db } = deps;
  const now = deps.now ?? (() => new Date());

  async function context(actor: Actor, query: DashboardQuery) {
    const profile = await repo.findProfile(db, actor.userId);
    if (!profile) throw AppError.notFound('Prestataire profile');
    return { profile, period: localPeriod(profile.timezone, query, now()) };
  }

  async function totals(actor: Actor, profile: NonNullable<Awaited<ReturnType<typeof repo.findProfile>>>, period: Period) {
    const [t, byStatus] = await Promise.all([repo.totals(db, actor.userId, period), repo.appointmentsByStatus(db, actor.userId, period)]);
    const appointments = Object.fromEntries(APPOINTMENT_STATUSES.map((s) => [s, 0])) as Record<AppointmentStatus, number>;
    for (const { status, n } of byStatus) appointments[status] = n;
    return {
      ...t,
      conversion: t.offers_sent === 0 ? null : Math.round((t.offers_accepted / t.offers_sent) * 10_000) / 10_000,
      appointments,
      rating: { average: profile.ratingAverage, count: profile.ratingCount },
    };
  }

  return {
    async dashboard(actor: Actor, query: DashboardQuery) {
      const { profile, period } = await context(actor, query);
      return { from: period.from, to: period.to, timezone: period.zone, totals: await totals(actor, profile, period) };
    },

    async stats(actor: Actor, query: StatsQuery) {
      const { profile, period } = await context(actor, query);
      const [t, series] = await Promise.all([totals(actor, profile, period), repo.series(db, actor.userId, period, query.group_by)]);
      return { from: period.from, to: period.to, timezone: period.zone, group_by: query.group_by, totals: t, series };
    },
  };
}

export type PrestataireDashboardService = ReturnType<typeof createPrestataireDashboardService>;
