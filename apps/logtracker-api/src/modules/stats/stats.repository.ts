import { queryRows, timestamptz as at } from '@repo/db';
import { sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import type { LogLevel } from '../../db/schema/index.js';


/** Counts per level in the current and the previous period, in one scan of both. */
export function countByLevel(db: DbTx, projectId: number, previousFrom: Date, from: Date, to: Date) {
  return queryRows<{ level: LogLevel; current: number; previous: number }>(
    db,
    sql`select level,
               count(*) filter (where timestamp >= ${at(from)})::int as current,
               count(*) filter (where timestamp < ${at(from)})::int as previous
          from logs
         where project_id = ${projectId} and timestamp >= ${at(previousFrom)} and timestamp < ${at(to)}
         group by level`,
  );
}

/** Counts per bucket and level; buckets are aligned on the range's start. */
export function series(db: DbTx, projectId: number, from: Date, to: Date, bucketSeconds: number) {
  return queryRows<{ bucket: Date | string; level: LogLevel; n: number }>(
    db,
    sql`select date_bin(make_interval(secs => ${bucketSeconds}), timestamp, ${at(from)}) as bucket,
               level, count(*)::int as n
          from logs
         where project_id = ${projectId} and timestamp >= ${at(from)} and timestamp < ${at(to)}
         group by 1, 2`,
  );
}

export function topSources(db: DbTx, projectId: number, from: Date, to: Date, limit: number) {
  return queryRows<{ source: string | null; count: number }>(
    db,
    sql`select source, count(*)::int as count
          from logs
         where project_id = ${projectId} and timestamp >= ${at(from)} and timestamp < ${at(to)}
         group by source
         order by count desc, source asc nulls last
         limit ${limit}`,
  );
}
