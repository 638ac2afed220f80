import { queryRows, timestamptz as at } from '@repo/db';
import { sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import type { LogLevel } from '../../db/schema/index.js';

/**
 * Statistics read the rollup tables the log triggers keep (per minute for short ranges, per hour
 * for long ones), never the logs themselves: a range costs the same for a thousand logs or a
 * million. Periods are aligned on whole buckets of the rollup they read.
 */
export type Granularity = 'minute' | 'hour';

const table = (g: Granularity) => (g === 'minute' ? sql.raw('log_counts_minute') : sql.raw('log_counts_hour'));

export const granularityMs: Record<Granularity, number> = { minute: 60_000, hour: 3_600_000 };

/** The start of the rollup bucket holding an instant (buckets are whole UTC minutes or hours). */
export function alignDown(date: Date, g: Granularity): Date {
  const ms = granularityMs[g];
  return new Date(Math.floor(date.getTime() / ms) * ms);
}

/** Counts per level in the current period [from, to) and the previous one [previousFrom, from). */
export function countByLevel(db: DbTx, g: Granularity, projectId: number, previousFrom: Date, from: Date, to: Date) {
  return queryRows<{ level: LogLevel; current: number; previous: number }>(
    db,
    sql`select level,
               coalesce(sum(count) filter (where bucket >= ${at(from)}), 0)::int as current,
               coalesce(sum(count) filter (where bucket < ${at(from)}), 0)::int as previous
          from ${table(g)}
         where project_id = ${projectId} and bucket >= ${at(previousFrom)} and bucket < ${at(to)}
         group by level`,
  );
}

/** Counts per rollup bucket and level within [from, to). */
export function countsByBucket(db: DbTx, g: Granularity, projectId: number, from: Date, to: Date) {
  return queryRows<{ bucket: Date | string; level: LogLevel; n: number }>(
    db,
    sql`select bucket, level, sum(count)::int as n
          from ${table(g)}
         where project_id = ${projectId} and bucket >= ${at(from)} and bucket < ${at(to)}
         group by 1, 2`,
  );
}

export function topSources(db: DbTx, g: Granularity, projectId: number, from: Date, to: Date, limit: number) {
  return queryRows<{ source: string | null; count: number }>(
    db,
    sql`select source, sum(count)::int as count
          from ${table(g)}
         where project_id = ${projectId} and bucket >= ${at(from)} and bucket < ${at(to)}
         group by source
        having sum(count) > 0
         order by count desc, source asc nulls last
         limit ${limit}`,
  );
}
