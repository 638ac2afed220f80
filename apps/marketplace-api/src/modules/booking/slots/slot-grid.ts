import { DateTime } from 'luxon';
import { DAY_MS } from '../../../lib/time.js';

/**
 * Free time and bookable slots of a prestataire (DESIGN.md §6): weekly hours are wall-clock times
 * in its time zone, closures whole local days, absences and appointments instants. Everything is
 * turned into UTC intervals first — a local day is 23, 24 or 25 hours long across a daylight-saving
 * change — and the slots are then laid on the local 30-minute grid.
 */

/** A half-open interval of UTC instants, in milliseconds. */
export interface Interval {
  start: number;
  end: number;
}

export interface WeeklyHours {
  /** ISO weekday, 1 = Monday … 7 = Sunday. */
  dayOfWeek: number;
  /** `HH:MM` or `HH:MM:SS`, local; the end may be `24:00`. */
  startTime: string;
  endTime: string;
}

export interface Schedule {
  timezone: string;
  weekly: WeeklyHours[];
  /** Local dates, both inclusive. */
  closures: { startDate: string; endDate: string }[];
  absences: { startsAt: Date; endsAt: Date }[];
  /** Active appointments. */
  busy: { startsAt: Date; endsAt: Date }[];
}

export const SLOT_GRID_MINUTES = 30 as const;
/** Slots start at least this long from now. */
export const MIN_LEAD_MINUTES = 60;

const MINUTE = 60_000;

/** Minutes after midnight of `HH:MM[:SS]` (`24:00` is 1440). */
function minutesOf(time: string): number {
  const [h = 0, m = 0, sec = 0] = time.split(':').map(Number);
  return h * 60 + m + Math.floor(sec) / 60;
}

/**
 * The calendar date `days` after `date` (`YYYY-MM-DD`), by arithmetic in UTC, where every day has 24
 * hours; no zone enters it. lib/time's `addDays` answers the same through Luxon at twenty times the
 * cost (14 µs a call), and a slot request asks for every date of its window.
 */
export const dateAfter = (date: string, days: number): string => new Date(Date.parse(`${date}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);

/** The UTC calendar date of an instant. */
export const utcDateOf = (instant: Date): string => instant.toISOString().slice(0, 10);

/** The earliest of the instants a local time names: two where a fall-back change repeats it. */
function firstOccurrence(local: DateTime): DateTime {
  return local.getPossibleOffsets().reduce((first, other) => (other.toMillis() < first.toMillis() ? other : first));
}

/**
 * The start of a local date in `zone`, by Luxon: its midnight; the first instant after it where a
 * change skips midnight (America/Santiago: 01:00); its first occurrence where a change repeats it
 * (America/Havana). Luxon alone resolves a repeated time by the zone's offset at the moment the code
 * runs, a summer or a winter answer; the earliest of its possible offsets is the same all year.
 */
function startOfDate(date: string, zone: string): DateTime {
  const [year, month, day] = date.split('-').map(Number);
  return firstOccurrence(DateTime.fromObject({ year, month, day }, { zone }));
}

/** A local date of a zone as Luxon places it. */
interface LocalDate {
  date: string;
  /** ISO weekday, 1 = Monday … 7 = Sunday. */
  weekday: number;
  start: DateTime;
  startMs: number;
  /** The next date's start. */
  endMs: number;
  /** Minutes east of UTC all day long; null on a day of a change (23 or 25 hours, or a midnight skipped). */
  offset: number | null;
}

/*
 * Fast path, kept because the bench shows Luxon alone costs more than the slots' goal allows: asking
 * Luxon for every local time took 2.0–2.4 ms for 14 days of a prestataire's slots (0.16 ms by the
 * former hand-written conversion), and GET /prestataires/{id}/availability/upcoming?days=14 went
 * from p95 9.9 to 10.4 ms (goal ≤ 10 ms) and from 886 to 317 req/s saturating (bench/run.mjs,
 * BENCH_ONLY=lifecycle, 1 000 prestataires, PostgreSQL 15, 2 CPUs). So Luxon's answer for each zone
 * and date is kept (a zone's calendar does not change while the process runs), and on a day of one
 * offset a local time is that day's start plus its minutes; a day with a change goes through Luxon
 * time by time. Kept so, 14 days cost 0.14 ms again, and the route 545 µs of CPU a request against
 * 569 µs before (the two apps alternated on one database).
 */
const LOCAL_DATES = new Map<string, Map<string, LocalDate>>();
const MAX_CACHED_DATES = 5_000;

function localDate(date: string, zone: string): LocalDate {
  let dates = LOCAL_DATES.get(zone);
  if (!dates || dates.size >= MAX_CACHED_DATES) {
    dates = new Map();
    LOCAL_DATES.set(zone, dates);
  }
  let found = dates.get(date);
  if (!found) {
    const start = startOfDate(date, zone);
    const next = startOfDate(dateAfter(date, 1), zone);
    const [startMs, endMs] = [start.toMillis(), next.toMillis()];
    const offset = endMs - startMs === DAY_MS && start.offset === next.offset ? start.offset : null;
    found = { date, weekday: new Date(`${date}T00:00:00Z`).getUTCDay() || 7, start, startMs, endMs, offset };
    dates.set(date, found);
  }
  return found;
}

/** The local dates `from` … `from + days - 1` of `zone`. */
function localDates(from: string, days: number, zone: string): LocalDate[] {
  const first = Date.parse(`${from}T00:00:00Z`);
  return Array.from({ length: days }, (_, i) => localDate(new Date(first + i * DAY_MS).toISOString().slice(0, 10), zone));
}

/** The local date of `zone` an instant falls on (its calendar day there). */
export function localDateOf(instant: Date, zone: string): string {
  const t = instant.getTime();
  const utc = utcDateOf(instant);
  // No zone is more than 14 hours from UTC: the local date is the UTC one or a neighbour.
  for (const date of [utc, dateAfter(utc, -1), dateAfter(utc, 1)]) {
    const day = localDate(date, zone);
    if (day.startMs <= t && t < day.endMs) return date;
  }
  return DateTime.fromJSDate(instant, { zone }).toISODate()!;
}

/**
 * The instant of `minutes` after the start of a local date (1440, `24:00`: the next date's start).
 * On a day of a change, by Luxon from the day's start: a time skipped by a spring-forward change
 * moves on by the gap (02:30 on the last Sunday of March in Paris is 03:30 summer time); a time a
 * fall-back change repeats is its first occurrence (the day's start carries the offset before it).
 */
function instantOn(day: LocalDate, minutes: number): number {
  if (minutes >= 24 * 60) return day.endMs;
  if (day.offset !== null) return day.startMs + minutes * MINUTE;
  const whole = Math.floor(minutes);
  return day.start.set({ hour: Math.floor(whole / 60), minute: whole % 60, second: Math.round((minutes - whole) * 60), millisecond: 0 }).toMillis();
}

/** Minutes east of UTC at instant `t`, from the local dates around it when they hold it, else from Luxon. */
function offsetIn(days: LocalDate[], t: number, zone: string): number {
  const day = days.find((d) => d.startMs <= t && t < d.endMs);
  return day?.offset ?? DateTime.fromMillis(t, { zone }).offset;
}

/** Sorts and merges overlapping or touching intervals. */
export function union(intervals: Interval[]): Interval[] {
  const sorted = intervals.filter((i) => i.end > i.start).sort((a, b) => a.start - b.start);
  const out: Interval[] = [];
  for (const i of sorted) {
    const last = out.at(-1);
    if (last && i.start <= last.end) last.end = Math.max(last.end, i.end);
    else out.push({ ...i });
  }
  return out;
}

/** `base` without any part of `cuts`. */
export function subtract(base: Interval[], cuts: Interval[]): Interval[] {
  let out = base;
  for (const cut of union(cuts)) {
    out = out.flatMap((i) => {
      if (cut.end <= i.start || cut.start >= i.end) return [i];
      const parts: Interval[] = [];
      if (cut.start > i.start) parts.push({ start: i.start, end: cut.start });
      if (cut.end < i.end) parts.push({ start: cut.end, end: i.end });
      return parts;
    });
  }
  return out;
}

/**
 * The open hours of the local dates `from` … `from + days - 1`, minus closures and absences (not
 * appointments): the time a prestataire works.
 */
export function workingTime(schedule: Omit<Schedule, 'busy'>, from: string, days: number): Interval[] {
  return workingTimeOn(schedule, localDates(from, days, schedule.timezone));
}

function workingTimeOn(schedule: Omit<Schedule, 'busy'>, days: LocalDate[]): Interval[] {
  const zone = schedule.timezone;
  const open: Interval[] = [];
  for (const day of days) {
    for (const w of schedule.weekly) {
      if (w.dayOfWeek !== day.weekday) continue;
      open.push({ start: instantOn(day, minutesOf(w.startTime)), end: instantOn(day, minutesOf(w.endTime)) });
    }
  }
  const closed = schedule.closures.map((c) => ({ start: localDate(c.startDate, zone).startMs, end: localDate(c.endDate, zone).endMs }));
  const away = schedule.absences.map((a) => ({ start: a.startsAt.getTime(), end: a.endsAt.getTime() }));
  return subtract(union(open), [...closed, ...away]);
}

/** The working time not taken by an active appointment. */
export function freeTime(schedule: Schedule, from: string, days: number): Interval[] {
  return freeTimeOn(schedule, localDates(from, days, schedule.timezone));
}

function freeTimeOn(schedule: Schedule, days: LocalDate[]): Interval[] {
  const busy = schedule.busy.map((a) => ({ start: a.startsAt.getTime(), end: a.endsAt.getTime() }));
  return subtract(workingTimeOn(schedule, days), busy);
}

export interface DaySlots {
  date: string;
  slots: { startsAt: Date; endsAt: Date }[];
}

/**
 * The bookable slots of each local date from `from` for `days` days: starts on the local 30-minute
 * grid, at least an hour from `now`, each slot of `durationMinutes` wholly inside free time.
 */
export function upcomingSlots(
  schedule: Schedule,
  opts: { from: string; days: number; durationMinutes: number; now: Date },
): DaySlots[] {
  const zone = schedule.timezone;
  const duration = opts.durationMinutes * MINUTE;
  const earliest = opts.now.getTime() + MIN_LEAD_MINUTES * MINUTE;
  const days = localDates(opts.from, opts.days, zone);
  const byDate = new Map<string, DaySlots>(days.map(({ date }) => [date, { date, slots: [] }]));
  const offsetAt = (t: number) => offsetIn(days, t, zone);
  const grid = SLOT_GRID_MINUTES * MINUTE;
  const push = (start: number, date: string) => byDate.get(date)?.slots.push({ startsAt: new Date(start), endsAt: new Date(start + duration) });
  for (const free of freeTimeOn(schedule, days)) {
    let start = Math.max(free.start, earliest);
    const offset = offsetAt(start);
    if (offset === offsetAt(free.end)) {
      // One offset all along (the usual case): local time is UTC shifted, no time-zone lookups.
      const shift = offset * MINUTE;
      const past = (((start + shift) % grid) + grid) % grid;
      if (past !== 0) start += grid - past;
      for (; start + duration <= free.end; start += grid) push(start, new Date(start + shift).toISOString().slice(0, 10));
      continue;
    }
    // The offset changes inside the interval (a daylight-saving change): local time slot by slot.
    while (start + duration <= free.end) {
      const local = DateTime.fromMillis(start, { zone });
      const past = pastGrid(local);
      if (past !== 0) {
        // Off the local grid (the interval's start, or a zone whose offset moved by less than
        // half an hour): on to the next grid point.
        start += grid - past;
        continue;
      }
      push(start, local.toISODate() ?? '');
      start += grid;
    }
  }
  return [...byDate.values()];
}

/** How far a local time is past the last point of the 30-minute grid, in milliseconds. */
function pastGrid(local: DateTime): number {
  return (local.minute % SLOT_GRID_MINUTES) * MINUTE + local.second * 1000 + local.millisecond;
}

/** Whether an instant starts a slot: on the local 30-minute grid of `zone`, to the millisecond. */
export function isOnGrid(at: Date, zone: string): boolean {
  return pastGrid(DateTime.fromJSDate(at, { zone })) === 0;
}

/** Whether `[startsAt, endsAt)` lies wholly inside one interval of `free`. */
export function fitsIn(free: Interval[], startsAt: Date, endsAt: Date): boolean {
  const s = startsAt.getTime();
  const e = endsAt.getTime();
  return free.some((i) => i.start <= s && e <= i.end);
}

/** The local dates an instant range touches, with a day's margin each side: what to load to judge it. */
export function datesAround(startsAt: Date, endsAt: Date, zone: string): { from: string; days: number } {
  const first = DateTime.fromJSDate(startsAt, { zone }).startOf('day').minus({ days: 1 });
  const last = DateTime.fromJSDate(endsAt, { zone }).startOf('day').plus({ days: 1 });
  return { from: first.toISODate() ?? '', days: Math.round(last.diff(first, 'days').days) + 1 };
}
