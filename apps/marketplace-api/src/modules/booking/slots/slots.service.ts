import { AppError } from '@repo/http';
import { DateTime } from 'luxon';
import type { DbTx } from '../../../db/index.js';
import { DAY_MS } from '../../../lib/time.js';
import type { Schedule } from './slot-grid.js';
import * as repo from './slots.repository.js';
import { dateAfter, datesAround, fitsIn, isOnGrid, localDateOf, MIN_LEAD_MINUTES, upcomingSlots, utcDateOf, workingTime } from './slot-grid.js';

export type SlotVerdict = 'free' | 'past' | 'off_grid' | 'outside_hours' | 'busy';

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

  /**
   * The schedule of the local days `from` … `from + days` (a date, or today in the prestataire's
   * zone), read in one round trip: the zone comes with the read, so the window asked for is widened
   * by a day on each side (no zone is more than 14 hours from UTC) and cut to the exact days here.
   */
  async function scheduleFor(
    db: DbTx,
    prestataireId: number,
    days: number,
    opts: { from?: string; visibleOnly: boolean; ignoreAppointmentId?: number; serviceId?: number },
  ) {
    const firstDate = dateAfter(opts.from ?? utcDateOf(now()), -1);
    const lastDate = dateAfter(firstDate, days + 2);
    const read = await repo.scheduleOf(db, prestataireId, {
      fromDate: firstDate,
      toDate: lastDate,
      first: new Date(`${firstDate}T00:00:00Z`),
      last: new Date(Date.parse(`${lastDate}T00:00:00Z`) + DAY_MS),
      ignoreAppointmentId: opts.ignoreAppointmentId,
      serviceId: opts.serviceId,
    });
    if (!read || (opts.visibleOnly && !read.visible)) return undefined;
    const from = opts.from ?? localDateOf(now(), read.timezone);
    const schedule: Schedule = { timezone: read.timezone, weekly: read.weekly, closures: read.closures, absences: read.absences, busy: read.busy };
    return { from, schedule, serviceMinutes: read.serviceMinutes };
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
      const read = await scheduleFor(deps.db, prestataireId, query.days, {
        from: query.from,
        visibleOnly: true,
        serviceId: query.durationMinutes === undefined ? query.serviceId : undefined,
      });
      if (!read) throw AppError.notFound('Prestataire');
      let duration = query.durationMinutes;
      if (duration === undefined && query.serviceId !== undefined) {
        if (read.serviceMinutes === null) throw AppError.validation({ service_id: ['Unknown or inactive service'] });
        duration = read.serviceMinutes;
      }
      duration ??= DEFAULT_DURATION_MINUTES;
      const days = upcomingSlots(read.schedule, { from: read.from, days: query.days, durationMinutes: duration, now: now() });
      return { days, timezone: read.schedule.timezone, durationMinutes: duration };
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
      opts: { ignoreAppointmentId?: number; tx?: DbTx; onGrid?: boolean } = {},
    ): Promise<SlotVerdict> {
      if (startsAt.getTime() < now().getTime() + MIN_LEAD_MINUTES * 60_000) return 'past';
      if (endsAt.getTime() <= startsAt.getTime()) return 'outside_hours';
      // Every local day the range can touch in any zone: the UTC days around it, a day on each side.
      const firstDay = Math.floor(startsAt.getTime() / DAY_MS);
      const span = Math.floor((endsAt.getTime() - 1) / DAY_MS) - firstDay + 1;
      const read = await scheduleFor(opts.tx ?? deps.db, prestataireId, span, {
        from: utcDateOf(startsAt),
        visibleOnly: false,
        ignoreAppointmentId: opts.ignoreAppointmentId,
      });
      if (!read) return 'outside_hours';
      const s = read.schedule;
      // A slot starts on the local 30-minute grid (DESIGN.md §6); asked of a new start, not of one already agreed.
      if (opts.onGrid && !isOnGrid(startsAt, s.timezone)) return 'off_grid';
      const { from, days } = datesAround(startsAt, endsAt, s.timezone);
      if (!fitsIn(workingTime(s, from, days), startsAt, endsAt)) return 'outside_hours';
      const overlaps = s.busy.some((b) => b.startsAt.getTime() < endsAt.getTime() && startsAt.getTime() < b.endsAt.getTime());
      return overlaps ? 'busy' : 'free';
    },
  };
}

export type AvailabilityService = ReturnType<typeof createAvailabilityService>;
