import { DateTime } from 'luxon';

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

/** The instant a local wall-clock time of a local date names; `24:00` is the next day's midnight. */
function localInstant(date: DateTime, time: string): number {
  const [h = 0, m = 0, s = 0] = time.split(':').map(Number);
  if (h === 24) return date.plus({ days: 1 }).startOf('day').toMillis();
  // A time skipped by a spring-forward change is moved on by the gap, as clocks are.
  return date.set({ hour: h, minute: m, second: Math.floor(s), millisecond: 0 }).toMillis();
}

function localDates(from: string, days: number, zone: string): DateTime[] {
  const first = DateTime.fromISO(from, { zone }).startOf('day');
  return Array.from({ length: days }, (_, i) => first.plus({ days: i }));
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
  const zone = schedule.timezone;
  const dates = localDates(from, days, zone);
  const open: Interval[] = [];
  for (const date of dates) {
    for (const w of schedule.weekly) {
      if (w.dayOfWeek !== date.weekday) continue;
      open.push({ start: localInstant(date, w.startTime), end: localInstant(date, w.endTime) });
    }
  }
  const closed = schedule.closures.map((c) => ({
    start: DateTime.fromISO(c.startDate, { zone }).startOf('day').toMillis(),
    end: DateTime.fromISO(c.endDate, { zone }).plus({ days: 1 }).startOf('day').toMillis(),
  }));
  const away = schedule.absences.map((a) => ({ start: a.startsAt.getTime(), end: a.endsAt.getTime() }));
  return subtract(union(open), [...closed, ...away]);
}

/** The working time not taken by an active appointment. */
export function freeTime(schedule: Schedule, from: string, days: number): Interval[] {
  const busy = schedule.busy.map((a) => ({ start: a.startsAt.getTime(), end: a.endsAt.getTime() }));
  return subtract(workingTime(schedule, from, days), busy);
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
  const byDate = new Map<string, DaySlots>(
    localDates(opts.from, opts.days, zone).map((d) => [d.toISODate() ?? '', { date: d.toISODate() ?? '', slots: [] }]),
  );
  for (const free of freeTime(schedule, opts.from, opts.days)) {
    let start = Math.max(free.start, earliest);
    while (start + duration <= free.end) {
      const local = DateTime.fromMillis(start, { zone });
      const past = (local.minute % SLOT_GRID_MINUTES) * MINUTE + local.second * 1000 + local.millisecond;
      if (past !== 0) {
        // Off the local grid (the interval's start, or a zone whose offset moved by less than
        // half an hour): on to the next grid point.
        start += SLOT_GRID_MINUTES * MINUTE - past;
        continue;
      }
      byDate.get(local.toISODate() ?? '')?.slots.push({ startsAt: new Date(start), endsAt: new Date(start + duration) });
      start += SLOT_GRID_MINUTES * MINUTE;
    }
  }
  return [...byDate.values()];
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
