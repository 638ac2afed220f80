import { queryRows, timestamptz as at } from '@repo/db';
import { and, eq, gte, lt, or, sql, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { logLevelCounts, logSourceCounts, type LogLevel, type RollupGrain } from '../../db/schema/index.js';

/**
 * Statistics read the rollup tables the log triggers keep, never the logs themselves: a range
 * costs the same for a thousand logs or a million.
 */
export const grainMs: Record<RollupGrain, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

/** The start of the rollup bucket holding an instant (buckets are whole UTC minutes, hours, days). */
export function alignDown(date: Date, grain: RollupGrain): Date {
  const ms = grainMs[grain];
  return new Date(Math.floor(date.getTime() / ms) * ms);
}

/** Rollup buckets of one grain from `from` (included) to `to` (excluded). */
export interface Span {
  grain: RollupGrain;
  from: Date;
  to: Date;
}

/**
 * The fewest rollup buckets that tile [from, to) exactly: whole days in the middle, whole hours
 * around them and minutes at the ends; `from` and `to` are whole minutes. Thirty days from the
 * middle of an hour read 29 day buckets and at most 46 hour buckets, not 720 hours.
 */
export function cover(from: Date, to: Date): Span[] {
  const spans: Span[] = [];
  const tile = (start: number, end: number, grains: readonly RollupGrain[]) => {
    const [grain, ...finer] = grains;
    if (start >= end || !grain) return;
    const ms = grainMs[grain];
    const first = finer.length === 0 ? start : Math.ceil(start / ms) * ms;
    const last = finer.length === 0 ? end : Math.floor(end / ms) * ms;
    if (first >= last) return tile(start, end, finer);
    tile(start, first, finer);
    spans.push({ grain, from: new Date(first), to: new Date(last) });
    tile(last, end, finer);
  };
  tile(from.getTime(), to.getTime(), ['day', 'hour', 'minute']);
  return spans;
}

function within(table: typeof logLevelCounts | typeof logSourceCounts, projectId: number, spans: Span[]): SQL | undefined {
  return and(
    eq(table.projectId, projectId),
    or(...spans.map((s) => and(eq(table.grain, s.grain), gte(table.bucket, s.from), lt(table.bucket, s.to)))),
  );
}

/**
 * Counts per level in the current period [from, to) and the previous one [previousFrom, from),
 * each read from the buckets that tile it (no bucket straddles `from`).
 */
export function countByLevel(db: DbTx, projectId: number, previousFrom: Date, from: Date, to: Date) {
  return queryRows<{ level: LogLevel; current: number; previous: number }>(
    db,
    sql`select level,
               coalesce(sum(count) filter (where bucket >= ${at(from)}), 0)::int as current,
               coalesce(sum(count) filter (where bucket < ${at(from)}), 0)::int as previous
          from ${logLevelCounts}
         where ${within(logLevelCounts, projectId, [...cover(previousFrom, from), ...cover(from, to)])}
         group by level`,
  );
}

/**
 * Counts per level in each of `slots` series buckets of `slotMs` from `from`, read from the
 * rollup buckets of one grain within [from, to); a rollup bucket past the last series bucket (the
 * range ends a little after it) counts in the last. Summed here, not in the app: a day of minutes
 * is 5 760 rows, a series 96.
 */
export function seriesByLevel(db: DbTx, grain: RollupGrain, projectId: number, from: Date, to: Date, slotMs: number, slots: number) {
  return queryRows<{ slot: number; level: LogLevel; n: number }>(
    db,
    sql`select least(${slots - 1}::int, floor(extract(epoch from bucket - ${at(from)}) * 1000 / ${slotMs}::bigint)::int) as slot,
               level, sum(count)::int as n
          from ${logLevelCounts}
         where project_id = ${projectId} and grain = ${grain} and bucket >= ${at(from)} and bucket < ${at(to)}
         group by 1, 2`,
  );
}

/** The sources with the most logs in [from, to), read from the buckets that tile it. */
export function topSources(db: DbTx, projectId: number, from: Date, to: Date, limit: number) {
  return queryRows<{ source: string | null; count: number }>(
    db,
    sql`select source, sum(count)::int as count
          from ${logSourceCounts}
         where ${within(logSourceCounts, projectId, cover(from, to))}
         group by source
        having sum(count) > 0
         order by count desc, source asc nulls last
         limit ${limit}`,
  );
}
