import { AppError } from '@repo/http';
import { DateTime } from 'luxon';
import type { DbTx } from '../../db/index.js';
import * as repo from './availability.repository.js';
import { dateOf, dayNumber, datesAround, fitsIn, MIN_LEAD_MINUTES, upcomingSlots, workingTime, zoneClock, type Schedule } from './slots.js';

export type SlotVerdict = 'free' | 'past' | 'outside_hours' | 'busy';

/** How far ahead the public availability shows closures and absences. */
export const OVERVIEW_DAYS = 31;
export const DEFAULT_DURATION_MINUTES = 60;

/**
 * A prestataire's time, as clients book it: weekly hours, closures, absences, and the free slots of
 * the coming days; and the check every booking makes (an offer's proposed start, an accepted direct
 * request, a reschedule) before the exclusion constraint has the last word.
 */
export function createAvailabilityService(deps: { db: DbTx; now?: () => Date }) {
  const now = deps.now ?? (() => new Date());

  async function visibleZone(prestataireId: number): Promise<string> {
    const zone = await repo.visibleTimezone(deps.db, prestataireId);
    if (!zone) throw AppError.notFound('Prestataire');
    return zone;
  }

  async function schedule(db: DbTx, prestataireId: number, zone: string, from: string, days: number, ignoreAppointmentId?: number): Promise<Schedule> {
    const clock = zoneClock(zone);
    const firstDay = dayNumber(from);
    const first = new Date(clock.instant(firstDay, 0));
    const last = new Date(clock.instant(firstDay + days, 0));
    const [weekly, closures, absences, busy] = await Promise.all([
      repo.weeklyHoursOf(db, prestataireId),
      repo.closuresBetween(db, prestataireId, from, dateOf(firstDay + days)),
      repo.absencesBetween(db, prestataireId, first, last),
      repo.busyBetween(db, prestataireId, first, last, ignoreAppointmentId),
    ]);
    return { timezone: zone, weekly, closures, absences, busy };
  }

  return {
    /** The weekly hours alone, sorted by day and time. */
    async weeklyHours(prestataireId: number) {
      const zone = await visibleZone(prestataireId);
      return { timezone: zone, weekly: await repo.weeklyHoursOf(deps.db, prestataireId) };
    },

    /** Weekly hours, and the closures and absences of the coming 31 days. */
    async overview(prestataireId: number) {
      const zone = await visibleZone(prestataireId);
      const today = DateTime.fromJSDate(now(), { zone }).startOf('day');
      const until = today.plus({ days: OVERVIEW_DAYS });
      const [weekly, closures, absences] = await Promise.all([
        repo.weeklyHoursOf(deps.db, prestataireId),
        repo.closuresBetween(deps.db, prestataireId, today.toISODate() ?? '', until.toISODate() ?? ''),
        repo.absencesBetween(deps.db, prestataireId, now(), until.toJSDate()),
      ]);
      return { timezone: zone, weekly, closures, absences };
    },

    /**
     * The free slots of `days` local days from `from` (default today in the prestataire's zone), each
     * `durationMinutes` long (default: the service's duration at this prestataire with `serviceId`, else 60).
     */
    async upcoming(prestataireId: number, query: { from?: string; days: number; durationMinutes?: number; serviceId?: number }) {
      const zone = await visibleZone(prestataireId);
      let duration = query.durationMinutes;
      if (duration === undefined && query.serviceId !== undefined) {
        duration = await repo.serviceDuration(deps.db, prestataireId, query.serviceId);
        if (duration === undefined) throw AppError.validation({ service_id: ['Unknown or inactive service'] });
      }
      duration ??= DEFAULT_DURATION_MINUTES;
      const from = query.from ?? dateOf(zoneClock(zone).dayOf(now().getTime()));
      const days = upcomingSlots(await schedule(deps.db, prestataireId, zone, from, query.days), {
        from,
        days: query.days,
        durationMinutes: duration,
        now: now(),
      });
      return { days, timezone: zone, durationMinutes: duration };
    },

    /**
     * Whether `[startsAt, endsAt)` can be booked with this prestataire now: 'past' when it starts
     * within the hour, 'outside_hours' when not wholly inside its weekly hours minus closures and
     * absences, 'busy' when it overlaps an active appointment (but `ignoreAppointmentId`'s), else 'free'.
     */
    async checkSlot(
      prestataireId: number,
      startsAt: Date,
      endsAt: Date,
      opts: { ignoreAppointmentId?: number; tx?: DbTx } = {},
    ): Promise<SlotVerdict> {
      if (startsAt.getTime() < now().getTime() + MIN_LEAD_MINUTES * 60_000) return 'past';
      if (endsAt.getTime() <= startsAt.getTime()) return 'outside_hours';
      const db = opts.tx ?? deps.db;
      const zone = await repo.timezoneOf(db, prestataireId);
      if (!zone) return 'outside_hours';
      const { from, days } = datesAround(startsAt, endsAt, zone);
      const s = await schedule(db, prestataireId, zone, from, days, opts.ignoreAppointmentId);
      if (!fitsIn(workingTime(s, from, days), startsAt, endsAt)) return 'outside_hours';
      const overlaps = s.busy.some((b) => b.startsAt.getTime() < endsAt.getTime() && startsAt.getTime() < b.endsAt.getTime());
      return overlaps ? 'busy' : 'free';
    },
  };
}

export type AvailabilityService = ReturnType<typeof createAvailabilityService>;
