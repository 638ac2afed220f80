import { envelope, id, iso, isoDateTime, paginatedEnvelope, paginationQuery, storableText, timestamp, UNSTORABLE_TEXT_MESSAGE } from '@repo/schemas';
import { DateTime } from 'luxon';
import { z } from 'zod';
import type { Absence, Closure } from '../../../db/schema/index.js';
import { isCalendarDate } from '../../../lib/time.js';

/** More intervals than any week needs (every half hour of every day is 336); bounds one body's work. */
export const MAX_WEEKLY_INTERVALS = 350;
export const MAX_CLOSURE_DAYS = 366;

export const AbsenceParams = z.object({ absence: id });
export const ClosureParams = z.object({ closure: id });

const reason = z.string().trim().max(500).refine(storableText, UNSTORABLE_TEXT_MESSAGE);
/** A reason as stored: a blank one is none. */
export const optionalReason = reason
  .nullable()
  .optional()
  .transform((v) => (v === undefined ? undefined : v || null));

// ─── Weekly hours ───────────────────────────────────────────────────────────────────────────────

const WALL_CLOCK = /^(?:(?:[01]\d|2[0-3]):[0-5]\d|24:00)$/;
const wallClock = z.string().regex(WALL_CLOCK, 'Must be a time HH:MM between 00:00 and 24:00');

const AvailabilityItem = z
  .object({
    day_of_week: z.number().int().min(1).max(7).describe('ISO weekday: 1 = Monday … 7 = Sunday'),
    start_time: wallClock.describe('Wall-clock time in your time zone, HH:MM'),
    end_time: wallClock.describe('After start_time; 24:00 is the end of the day'),
  })
  .superRefine((item, ctx) => {
    if (!WALL_CLOCK.test(item.start_time) || !WALL_CLOCK.test(item.end_time)) return;
    if (item.end_time <= item.start_time) ctx.addIssue({ code: 'custom', path: ['end_time'], message: 'Must be after start_time' });
  });
type AvailabilityItem = z.infer<typeof AvailabilityItem>;

/** 422 on each interval that starts before an earlier one of its day ends (touching ends do not overlap). */
function checkOverlaps(items: AvailabilityItem[], ctx: z.RefinementCtx) {
  const valid = items
    .map((item, index) => ({ ...item, index }))
    .filter((i) => WALL_CLOCK.test(i.start_time) && WALL_CLOCK.test(i.end_time) && i.start_time < i.end_time)
    .sort((a, b) => a.day_of_week - b.day_of_week || a.start_time.localeCompare(b.start_time) || a.index - b.index);
  // The interval of the day reaching latest so far: one long interval may cover several after it.
  let reach: (typeof valid)[number] | undefined;
  for (const cur of valid) {
    if (reach && reach.day_of_week === cur.day_of_week && cur.start_time < reach.end_time) {
      ctx.addIssue({
        code: 'custom',
        path: [cur.index, 'start_time'],
        message: `Overlaps item ${reach.index} (${reach.start_time}–${reach.end_time}) on the same day`,
      });
    }
    if (!reach || reach.day_of_week !== cur.day_of_week || cur.end_time > reach.end_time) reach = cur;
  }
}

/** The whole week: what is left out is closed. */
export const AvailabilitiesBody = z.object({
  availabilities: z.array(AvailabilityItem).max(MAX_WEEKLY_INTERVALS).superRefine(checkOverlaps),
});
export type AvailabilitiesBody = z.infer<typeof AvailabilitiesBody>;

export const AvailabilityResponse = z.object({
  id: z.number().int(),
  day_of_week: z.number().int(),
  start_time: z.string().describe('HH:MM in your time zone'),
  end_time: z.string().describe('HH:MM; 24:00 is the end of the day'),
});
export const AvailabilitiesEnvelope = envelope(z.array(AvailabilityResponse));

/** PostgreSQL answers `08:00:00` (and `24:00:00`); the API speaks HH:MM. */
export function presentAvailability(a: { id: number; dayOfWeek: number; startTime: string; endTime: string }): z.infer<typeof AvailabilityResponse> {
  return { id: a.id, day_of_week: a.dayOfWeek, start_time: a.startTime.slice(0, 5), end_time: a.endTime.slice(0, 5) };
}

// ─── Absences ───────────────────────────────────────────────────────────────────────────────────

export const AbsencesQuery = paginationQuery({ defaultPerPage: 50, maxPerPage: 100 })
  .extend({
    from: isoDateTime.optional().describe('Absences ending after this instant; default: now'),
    to: isoDateTime.optional().describe('Absences starting before this instant'),
  })
  .superRefine((q, ctx) => {
    if (q.from && q.to && q.to <= q.from) ctx.addIssue({ code: 'custom', path: ['to'], message: 'Must be after from' });
  });
export type AbsencesQuery = z.infer<typeof AbsencesQuery>;

export const CreateAbsenceBody = z
  .object({
    starts_at: isoDateTime.describe('An instant with its offset: 2026-12-24T08:00:00+01:00'),
    ends_at: isoDateTime,
    reason: optionalReason,
  })
  .superRefine((body, ctx) => {
    if (body.ends_at <= body.starts_at) {
      ctx.addIssue({ code: 'custom', path: ['ends_at'], message: 'Must be after starts_at' });
    } else if (body.ends_at > DateTime.fromJSDate(body.starts_at, { zone: 'utc' }).plus({ years: 1 }).toJSDate()) {
      ctx.addIssue({ code: 'custom', path: ['ends_at'], message: 'An absence lasts at most one year' });
    }
  });
export type CreateAbsenceBody = z.infer<typeof CreateAbsenceBody>;

export const AbsenceResponse = z.object({
  id: z.number().int(),
  starts_at: timestamp,
  ends_at: timestamp,
  reason: z.string().nullable(),
  created_at: timestamp,
});
export const AbsenceEnvelope = envelope(AbsenceResponse);
export const AbsenceListEnvelope = paginatedEnvelope(AbsenceResponse);

export function presentAbsence(a: Absence): z.infer<typeof AbsenceResponse> {
  return { id: a.id, starts_at: iso(a.startsAt), ends_at: iso(a.endsAt), reason: a.reason, created_at: iso(a.createdAt) };
}

// ─── Closures ───────────────────────────────────────────────────────────────────────────────────

const calendarDate = z.string().refine(isCalendarDate, 'Must be a date YYYY-MM-DD');

/** What is wrong with a closure's range, on the field to blame (nothing when it is fine). */
export function closureRangeErrors(
  startDate: string,
  endDate: string,
  blame: 'start_date' | 'end_date' = 'end_date',
): Record<string, string[]> {
  if (endDate < startDate) {
    return { [blame]: [blame === 'end_date' ? 'Must be on or after start_date' : 'Must be on or before end_date'] };
  }
  const days = DateTime.fromISO(endDate, { zone: 'utc' }).diff(DateTime.fromISO(startDate, { zone: 'utc' }), 'days').days + 1;
  if (days > MAX_CLOSURE_DAYS) return { [blame]: [`A closure lasts at most ${MAX_CLOSURE_DAYS} days`] };
  return {};
}

export const ClosuresQuery = paginationQuery({ defaultPerPage: 50, maxPerPage: 100 })
  .extend({
    from: calendarDate.optional().describe('Closures ending on or after this day; default: today in your time zone'),
    to: calendarDate.optional().describe('Closures starting on or before this day'),
  })
  .superRefine((q, ctx) => {
    if (q.from && q.to && q.to < q.from) ctx.addIssue({ code: 'custom', path: ['to'], message: 'Must be on or after from' });
  });
export type ClosuresQuery = z.infer<typeof ClosuresQuery>;

const closureFields = {
  start_date: calendarDate.describe('First closed day (local, YYYY-MM-DD)'),
  end_date: calendarDate.describe('Last closed day, inclusive'),
  reason: optionalReason,
};

/** A whole closure (POST and PUT): a reason left out is none. */
export const ClosureBody = z.object(closureFields).superRefine((body, ctx) => {
  if (!isCalendarDate(body.start_date) || !isCalendarDate(body.end_date)) return;
  for (const [field, messages] of Object.entries(closureRangeErrors(body.start_date, body.end_date))) {
    for (const message of messages) ctx.addIssue({ code: 'custom', path: [field], message });
  }
});
export type ClosureBody = z.infer<typeof ClosureBody>;

/** PATCH: the fields given change; the merged closure is checked. */
export const PatchClosureBody = z.object({
  start_date: closureFields.start_date.optional(),
  end_date: closureFields.end_date.optional(),
  reason: optionalReason,
});
export type PatchClosureBody = z.infer<typeof PatchClosureBody>;

export const ClosureResponse = z.object({
  id: z.number().int(),
  start_date: z.string(),
  end_date: z.string(),
  reason: z.string().nullable(),
  created_at: timestamp,
  updated_at: timestamp,
});
export const ClosureEnvelope = envelope(ClosureResponse);
export const ClosureListEnvelope = paginatedEnvelope(ClosureResponse);

export function presentClosure(c: Closure): z.infer<typeof ClosureResponse> {
  return {
    id: c.id,
    start_date: c.startDate,
    end_date: c.endDate,
    reason: c.reason,
    created_at: iso(c.createdAt),
    updated_at: iso(c.updatedAt),
  };
}
