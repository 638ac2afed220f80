import { DateTime, IANAZone } from 'luxon';

/**
 * Calendar days and time zones, through Luxon (see "Dates and time zones" in docs/marketplace.md): the platform's
 * "today" is a day in its zone (PLATFORM_TIME_ZONE, Europe/Paris), not in UTC, and the day
 * boundaries of a zone move with daylight saving. Calendar days travel as `YYYY-MM-DD` strings,
 * which compare in calendar order and are what PostgreSQL's `date` columns give back.
 */

/** Milliseconds in a UTC day. A day of a zone's calendar may last 23 or 25 hours: step through those with `addDays` and `startOfDayIn`. */
export const DAY_MS = 86_400_000;

/** An IANA zone name such as `Europe/Paris`, known to the runtime's time-zone database. */
export function isTimeZone(value: string): boolean {
  // Names only: offsets like "+01:00" are not zones (they ignore daylight saving).
  return /^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(value) && IANAZone.isValidZone(value);
}

/** A real calendar day written YYYY-MM-DD (no 2025-02-30). */
export function isCalendarDate(value: string): boolean {
  return /^\d{4}-\d{2}-\d{2}$/.test(value) && DateTime.fromISO(value, { zone: 'utc' }).isValid;
}

/** The calendar day (`YYYY-MM-DD`) it is in `zone` at the instant `now`. */
export function todayIn(zone: string, now: Date = new Date()): string {
  return DateTime.fromJSDate(now, { zone }).toISODate()!;
}

/**
 * The instant a calendar day begins in `zone`. Not always its midnight: where daylight saving starts
 * at midnight (America/Santiago, once Asia/Beirut) the day begins at 01:00, and a day is 23 or 25
 * hours long around a change, so a day's bounds are never `date + n × 24 h`.
 */
export function startOfDayIn(zone: string, date: string): Date {
  return DateTime.fromISO(date, { zone }).startOf('day').toJSDate();
}

/** The calendar day `days` after `date` (both `YYYY-MM-DD`; `days` may be negative). */
export function addDays(date: string, days: number): string {
  return DateTime.fromISO(date, { zone: 'utc' }).plus({ days }).toISODate()!;
}

/** The platform's clock: "today" in its zone. Services take it, so a test can fix the day. */
export interface Clock {
  readonly zone: string;
  today(): string;
}

export function createClock(zone: string, now: () => Date = () => new Date()): Clock {
  if (!isTimeZone(zone)) throw new Error(`Unknown time zone: ${zone}`);
  return { zone, today: () => todayIn(zone, now()) };
}
