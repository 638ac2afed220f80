import { alignDown, grainMs } from './stats.repository.js';
import { RANGE_SPEC, type TimeRange } from './stats.schemas.js';

/** The period statistics cover, the buckets its series is cut into, and the rollup grain they read. */
export interface Period {
  label: TimeRange | 'custom';
  from: Date;
  to: Date;
  bucketMs: number;
  granularity: 'minute' | 'hour';
}

/** A named range: it ends with the rollup bucket that holds now, so it spans whole buckets. */
export function presetPeriod(range: TimeRange, now: Date): Period {
  const { ms, bucketMs, granularity } = RANGE_SPEC[range];
  const to = new Date(alignDown(now, granularity).getTime() + grainMs[granularity]);
  return { label: range, from: new Date(to.getTime() - ms), to, bucketMs, granularity };
}

/** The buckets a custom range may be cut into, finest first, and how many it may hold at most. */
export const CUSTOM_BUCKETS_MS = [60_000, 5 * 60_000, 15 * 60_000, 3_600_000, 6 * 3_600_000, 86_400_000] as const;
export const MAX_CUSTOM_BUCKETS = 120;

/**
 * A range of the caller's choosing, cut into the finest buckets that make at most 120: its start
 * aligned down to a bucket, its end up to the grain read (minutes for buckets under an hour, hours
 * otherwise, as for the named ranges), so that the totals and the series count the same whole
 * rollup buckets. Past 120 days even days make more than 120 buckets, and days it is.
 */
export function customPeriod(fromDate: Date, toDate: Date): Period {
  let period: Period | undefined;
  for (const bucketMs of CUSTOM_BUCKETS_MS) {
    const granularity = bucketMs < grainMs.hour ? 'minute' : 'hour';
    const from = new Date(Math.floor(fromDate.getTime() / bucketMs) * bucketMs);
    const to = new Date(Math.ceil(toDate.getTime() / grainMs[granularity]) * grainMs[granularity]);
    period = { label: 'custom', from, to, bucketMs, granularity };
    if (bucketCount(period) <= MAX_CUSTOM_BUCKETS) return period;
  }
  if (!period) throw new Error('no custom bucket');
  return period;
}

export function bucketCount(period: Period): number {
  return Math.ceil((period.to.getTime() - period.from.getTime()) / period.bucketMs);
}
