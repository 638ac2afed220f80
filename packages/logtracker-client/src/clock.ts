/**
 * Timestamps strictly increasing within the process, to the microsecond: a line is never stamped
 * before the one read ahead of it, even when the wall clock steps back. The log tracker lists
 * newest first by timestamp, which it keeps to the millisecond, then by id (arrival): lines of one
 * millisecond keep their order because batches are stored one after the other, in order.
 */
export function createClock(now: () => number = Date.now) {
  let last = 0;
  const take = (micros: number) => {
    last = micros;
    return isoMicros(micros);
  };
  return {
    /** The time of reading: the wall clock's millisecond, moved on by a microsecond when taken. */
    now(): string {
      return take(Math.max(now() * 1000, last + 1));
    },
    /**
     * A time the log carries itself (microseconds since the epoch). Kept as it is, except that one
     * equal to or just before the previous (within a millisecond: lines of one millisecond)
     * follows it by a microsecond.
     */
    at(micros: number): string {
      if (micros <= last && last - micros < 1000) return take(last + 1);
      if (micros > last) return take(micros);
      return isoMicros(micros);
    },
  };
}
export type Clock = ReturnType<typeof createClock>;

/** ISO 8601 in UTC with six fractional digits. */
export function isoMicros(micros: number): string {
  const ms = Math.floor(micros / 1000);
  const sub = Math.round(micros - ms * 1000);
  // Lines read together share their millisecond: its text is made once (toISOString is the cost).
  if (ms !== lastMs) {
    lastMs = ms;
    lastPrefix = new Date(ms).toISOString().slice(0, 23);
  }
  return `${lastPrefix}${sub < 10 ? '00' : sub < 100 ? '0' : ''}${sub}Z`;
}
let lastMs = NaN;
let lastPrefix = '';

const MIN_MICROS = 0;
const MAX_MICROS = Date.parse('2100-01-01T00:00:00Z') * 1000;
const ISO = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.(\d+))?)?(?:Z|[+-]\d{2}:?\d{2})$/i;

/**
 * Microseconds since the epoch from what a structured log carries as its time: an ISO 8601 instant
 * with a zone, or a number of milliseconds since the epoch (pino's `time`; a number below 10¹¹ is
 * taken as seconds, which every tool that writes seconds writes). Undefined when it is neither, or
 * outside the years the server stores (1970–2100).
 */
export function microsOf(value: unknown): number | undefined {
  let micros: number | undefined;
  if (typeof value === 'number' && Number.isFinite(value)) {
    micros = Math.round((value < 1e11 ? value * 1000 : value) * 1000);
  } else if (typeof value === 'string') {
    const match = ISO.exec(value.trim());
    const ms = match ? Date.parse(value.trim()) : NaN;
    if (Number.isNaN(ms)) return undefined;
    const fraction = (match?.[1] ?? '').padEnd(6, '0');
    micros = ms * 1000 + Number(fraction.slice(3, 6));
  }
  return micros !== undefined && micros >= MIN_MICROS && micros < MAX_MICROS ? micros : undefined;
}
