import { envelope, timestamp } from '@repo/schemas';
import { z } from 'zod';
import { ListLogsQuery } from '../logs/index.js';

export const TIME_RANGES = ['1h', '24h', '7d', '30d'] as const;
export type TimeRange = (typeof TIME_RANGES)[number];

/**
 * The length of each range, the bucket its series is cut into, and the rollup it reads. A range
 * ends with the rollup bucket that holds now; 24 hours read whole hours (24 rows a level, where
 * minutes would be 1 440), so their hourly series buckets are whole UTC hours.
 */
export const RANGE_SPEC: Record<TimeRange, { ms: number; bucketMs: number; granularity: 'minute' | 'hour' }> = {
  '1h': { ms: 3_600_000, bucketMs: 5 * 60_000, granularity: 'minute' },
  '24h': { ms: 86_400_000, bucketMs: 3_600_000, granularity: 'hour' },
  '7d': { ms: 7 * 86_400_000, bucketMs: 6 * 3_600_000, granularity: 'hour' },
  '30d': { ms: 30 * 86_400_000, bucketMs: 86_400_000, granularity: 'hour' },
};

export const timeRange = z.enum(TIME_RANGES, { message: `Must be one of: ${TIME_RANGES.join(', ')}` });

/** The longest custom range: a year and a month of margin, enough to compare one year with the last. */
export const MAX_CUSTOM_RANGE_DAYS = 400;

// The list's instants: ISO 8601 with a zone, between 1970 and 2100.
const instant = ListLogsQuery.shape.from_date;

export const StatsQuery = z
  .object({
    time_range: timeRange.default('24h'),
    from_date: instant.describe('Start of a custom range (included), with `to_date`; replaces `time_range`'),
    to_date: instant.describe(`End of a custom range (excluded), with \`from_date\`; at most ${MAX_CUSTOM_RANGE_DAYS} days after it`),
  })
  .superRefine((q, ctx) => {
    if ((q.from_date === undefined) !== (q.to_date === undefined)) {
      const missing = q.from_date === undefined ? 'from_date' : 'to_date';
      ctx.addIssue({ code: 'custom', path: [missing], message: 'Send from_date and to_date together' });
      return;
    }
    // A bound refused already has its own issue (zod still runs this on what it holds).
    if (!(q.from_date instanceof Date) || !(q.to_date instanceof Date)) return;
    const ms = q.to_date.getTime() - q.from_date.getTime();
    if (ms <= 0) ctx.addIssue({ code: 'custom', path: ['to_date'], message: 'Must be after from_date' });
    else if (ms > MAX_CUSTOM_RANGE_DAYS * 86_400_000) {
      ctx.addIssue({ code: 'custom', path: ['to_date'], message: `Must be at most ${MAX_CUSTOM_RANGE_DAYS} days after from_date` });
    }
  });
export type StatsQuery = z.infer<typeof StatsQuery>;

const levelCounts = z.object({
  error: z.number().int(),
  warning: z.number().int(),
  info: z.number().int(),
  debug: z.number().int(),
});

const periodTotals = z.object({
  total: z.number().int(),
  by_level: levelCounts,
  error_rate: z.number(),
});

export const StatsResponse = z.object({
  time_range: z.enum([...TIME_RANGES, 'custom']).describe('The named range, or `custom` for `from_date` and `to_date`'),
  from: timestamp,
  to: timestamp,
  bucket_seconds: z.number().int(),
  ...periodTotals.shape,
  series: z.array(z.object({ start: timestamp, total: z.number().int(), ...levelCounts.shape })),
  top_sources: z.array(z.object({ source: z.string().nullable(), count: z.number().int() })),
  previous_period: periodTotals.extend({ from: timestamp, to: timestamp }),
  change: z.object({
    total_pct: z.number().nullable().describe('Percent change of the total against the previous period; null when it had none'),
    errors_pct: z.number().nullable(),
    error_rate_delta: z.number().describe('Difference of error rates, in points of rate (0.05 = five percentage points)'),
  }),
});

export const StatsEnvelope = envelope(StatsResponse);
