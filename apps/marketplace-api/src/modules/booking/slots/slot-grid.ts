import { DateTime, IANAZone } from 'luxon';
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
/** Offsets change at whole quarter hours of UTC in every zone in use: an offset is looked up once per quarter. */
const OFFSET_BUCKET = 15 * MINUTE;

const MIDNIGHT_OFFSETS = new Map<string, Map<number, number>>();
const MAX_CACHED_MIDNIGHTS = 4096;

/**
 * Local wall-clock time of one zone, by arithmetic: local dates are day numbers (days since
 * 1970-01-01). A time-zone lookup costs far more than the rest of a day's computation, so the
 * zone's offset is looked up at each UTC midnight asked about, and inside a UTC day whose two
 * midnights differ (a change that day) once per quarter hour.
 */
export function zoneClock(zone: string) {
  const tz = IANAZone.create(zone);
  // A zone's offset at an instant does not change: the midnights are kept across calls (bounded).
  let midnights = MIDNIGHT_OFFSETS.get(zone);
  if (!midnights || midnights.size > MAX_CACHED_MIDNIGHTS) {
    midnights = new Map();
    MIDNIGHT_OFFSETS.set(zone, midnights);
  }
  const quarters = new Map<number, number>();
  const cached = (cache: Map<number, number>, key: number, at: number) => {
    let o = cache.get(key);
    if (o === undefined) {
      o = tz.offset(at);
      cache.set(key, o);
    }
    return o;
  };
  const offsetAt = (t: number): number => {
    const day = Math.floor(t / DAY_MS);
    const o = cached(midnights, day, day * DAY_MS);
    if (o === cached(midnights, day + 1, (day + 1) * DAY_MS)) return o;
    const quarter = Math.floor(t / OFFSET_BUCKET);
    return cached(quarters, quarter, quarter * OFFSET_BUCKET);
  };
  return {
    /** Minutes east of UTC at instant `t`. */
    offsetAt,
    /** The local day (day number) of instant `t`. */
    dayOf(t: number): number {
      return Math.floor((t + offsetAt(t) * MINUTE) / DAY_MS);
    },
    /**
     * The instant of `minutes` after local midnight of local day `day` (Luxon's rule: a time skipped
     * by a spring-forward change moves on by the gap; a repeated one is its first occurrence).
     */
    instant(day: number, minutes: number): number {
      const local = day * DAY_MS + minutes * MINUTE;
      const o = offsetAt(local);
      let guess = local - o * MINUTE;
      const o2 = offsetAt(guess);
      if (o === o2) return guess;
      guess -= (o2 - o) * MINUTE;
      const o3 = offsetAt(guess);
      if (o2 === o3) return guess;
      return local - Math.min(o2, o3) * MINUTE;
    },
  };
}

/** `YYYY-MM-DD` → day number. */
export const dayNumber = (date: string): number => Math.floor(Date.parse(`${date}T00:00:00Z`) / DAY_MS);
/** Day number → `YYYY-MM-DD`. */
export const dateOf = (day: number): string => new Date(day * DAY_MS).toISOString().slice(0, 10);
/** ISO weekday (1 = Monday) of a day number; day 0, 1970-01-01, was a Thursday. */
const weekdayOf = (day: number): number => ((((day + 3) % 7) + 7) % 7) + 1;

/** Minutes after midnight of `HH:MM[:SS]` (`24:00` is 1440). */
function minutesOf(time: string): number {
  const [h = 0, m = 0, sec = 0] = time.split(':').map(Number);
  return h * 60 + m + Math.floor(sec) / 60;
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
  const clock = zoneClock(schedule.timezone);
  const first = dayNumber(from);
  const open: Interval[] = [];
  for (let day = first; day < first + days; day++) {
    const weekday = weekdayOf(day);
    for (const w of schedule.weekly) {
      if (w.dayOfWeek !== weekday) continue;
      open.push({ start: clock.instant(day, minutesOf(w.startTime)), end: clock.instant(day, minutesOf(w.endTime)) });
    }
  }
  const closed = schedule.closures.map((c) => ({
    start: clock.instant(dayNumber(c.startDate), 0),
    end: clock.instant(dayNumber(c.endDate) + 1, 0),
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
  const first = dayNumber(opts.from);
  const byDate = new Map<string, DaySlots>(
    Array.from({ length: opts.days }, (_, i) => dateOf(first + i)).map((date) => [date, { date, slots: [] }]),
  );
  const clock = zoneClock(zone);
  const grid = SLOT_GRID_MINUTES * MINUTE;
  const push = (start: number, date: string) => byDate.get(date)?.slots.push({ startsAt: new Date(start), endsAt: new Date(start + duration) });
  for (const free of freeTime(schedule, opts.from, opts.days)) {
    let start = Math.max(free.start, earliest);
    const offset = clock.offsetAt(start);
    if (offset === clock.offsetAt(free.end)) {
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
      const past = (local.minute % SLOT_GRID_MINUTES) * MINUTE + local.second * 1000 + local.millisecond;
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

/** Whether an instant starts a slot: on the local 30-minute grid of `zone`, to the second. */
export function isOnGrid(at: Date, zone: string): boolean {
  const local = DateTime.fromJSDate(at, { zone });
  return local.minute % SLOT_GRID_MINUTES === 0 && local.second === 0 && local.millisecond === 0;
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
