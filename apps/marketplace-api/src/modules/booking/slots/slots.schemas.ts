import { envelope, id, iso } from '@repo/schemas';
import { z } from 'zod';
import { isCalendarDate } from '../../../lib/time.js';
import { PrestataireParams } from '../../prestataires/index.js';
import type { DaySlots } from './slot-grid.js';
import { SLOT_GRID_MINUTES } from './slot-grid.js';

export { PrestataireParams };

export const MAX_UPCOMING_DAYS = 31;

const localDate = z.string().trim().refine(isCalendarDate, { message: 'Must be a real date written YYYY-MM-DD' });
const instant = z.iso.datetime();

export const UpcomingQuery = z.object({
  from: localDate.optional().describe("A local date in the prestataire's time zone; default today there"),
  days: z.coerce.number().int().min(1).max(MAX_UPCOMING_DAYS).default(7),
  duration_minutes: z.coerce.number().int().min(15).max(1440).optional().describe("Default: the service's duration with service_id, else 60"),
  service_id: id.optional(),
});

export const WeeklyHoursItem = z.object({
  day_of_week: z.number().int().min(1).max(7).describe('ISO weekday, 1 = Monday'),
  start_time: z.string().describe('HH:MM, local'),
  end_time: z.string().describe('HH:MM, local; 24:00 is midnight at the end of the day'),
});

export const WeeklyHoursEnvelope = z.object({
  data: z.array(WeeklyHoursItem),
  meta: z.object({ timezone: z.string() }),
});

export const AvailabilityEnvelope = envelope(
  z.object({
    timezone: z.string(),
    weekly_hours: z.array(WeeklyHoursItem),
    closures: z.array(z.object({ start_date: z.string(), end_date: z.string() })).describe('Whole local days closed, both inclusive, of the coming 31 days'),
    absences: z.array(z.object({ starts_at: instant, ends_at: instant })).describe('Time away in the coming 31 days (UTC instants)'),
  }),
);

export const UpcomingEnvelope = z.object({
  data: z.array(
    z.object({
      date: z.string().describe('Local date, YYYY-MM-DD'),
      slots: z.array(z.object({ starts_at: instant, ends_at: instant })),
    }),
  ),
  meta: z.object({ timezone: z.string(), slot_minutes: z.literal(SLOT_GRID_MINUTES), duration_minutes: z.number().int() }),
});

export const hhmm = (time: string) => time.slice(0, 5);

export function presentWeekly(rows: { dayOfWeek: number; startTime: string; endTime: string }[]) {
  return rows.map((w) => ({ day_of_week: w.dayOfWeek, start_time: hhmm(w.startTime), end_time: hhmm(w.endTime) }));
}

export function presentDays(days: DaySlots[]) {
  return days.map((d) => ({ date: d.date, slots: d.slots.map((s) => ({ starts_at: iso(s.startsAt), ends_at: iso(s.endsAt) })) }));
}
