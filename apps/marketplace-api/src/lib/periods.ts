import { AppError } from '@repo/http';
import { addDays, isCalendarDate, startOfDayIn, todayIn } from './time.js';

/** How statistics group their series: calendar days, ISO weeks (from Monday) or months, in a time zone. */
export const GROUP_BY = ['day', 'week', 'month'] as const;
export type GroupBy = (typeof GROUP_BY)[number];

/** The longest range a statistics read may cover, in days (a leap year). */
export const MAX_PERIOD_DAYS = 366;
/** The range read when none is given: the last 30 days, today included. */
export const DEFAULT_PERIOD_DAYS = 30;

/**
 * A range of local calendar days (`from`..`to`, both included) in `zone`, with the half-open range of
 * instants it covers: `start` is when `from` begins there, `end` when the day after `to` begins
 * (days are 23 or 25 hours long around a daylight-saving change, never `n × 24 h`).
 */
export interface Period {
  from: string;
  to: string;
  zone: string;
  start: Date;
  end: Date;
}

/** Days between two `YYYY-MM-DD` dates (calendar days: no time zone enters). */
function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000);
}

/**
 * The period `from`..`to` in `zone`; by default the last 30 days up to today there. 422 when a bound
 * is not a real day, `to` is before `from`, or the range spans more than 366 days.
 */
export function localPeriod(zone: string, query: { from?: string; to?: string }, now: Date = new Date()): Period {
  if (query.from !== undefined && !isCalendarDate(query.from)) throw AppError.validation({ from: ['Must be a date (YYYY-MM-DD)'] });
  if (query.to !== undefined && !isCalendarDate(query.to)) throw AppError.validation({ to: ['Must be a date (YYYY-MM-DD)'] });
  const to = query.to ?? (query.from === undefined ? todayIn(zone, now) : addDays(query.from, DEFAULT_PERIOD_DAYS - 1));
  const from = query.from ?? addDays(to, -(DEFAULT_PERIOD_DAYS - 1));
  const span = daysBetween(from, to);
  if (span < 0) throw AppError.validation({ to: ['Must not be before `from`'] });
  if (span + 1 > MAX_PERIOD_DAYS) throw AppError.validation({ to: [`The range may cover at most ${MAX_PERIOD_DAYS} days`] });
  return { from, to, zone, start: startOfDayIn(zone, from), end: startOfDayIn(zone, addDays(to, 1)) };
}
