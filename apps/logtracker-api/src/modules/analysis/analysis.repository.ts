import { queryRows, timestamptz } from '@repo/db';
import { and, desc, eq, sql, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { analyses, type LogLevel } from '../../db/schema/index.js';

function levelFilter(levels: LogLevel[], column: SQL = sql`level`): SQL {
  return sql`${column} in (${sql.join(
    levels.map((l) => sql`${l}`),
    sql`, `,
  )})`;
}

/** Counts per pattern in the range, the levels filter applied, largest first. */
export function patternCounts(db: DbTx, projectId: number, from: Date, to: Date, levels: LogLevel[], limit: number) {
  return queryRows<{ pattern_id: number; n: number }>(
    db,
    sql`select pattern_id, count(*)::int as n
          from log_patterns
         where project_id = ${projectId} and timestamp >= ${timestamptz(from)} and timestamp < ${timestamptz(to)}
           and ${levelFilter(levels)}
         group by pattern_id
         order by n desc, pattern_id
         limit ${limit}`,
  );
}

/** Patterns first seen within the range (never before it), with their count in the range. */
export function newPatterns(db: DbTx, projectId: number, from: Date, to: Date, levels: LogLevel[], limit: number) {
  return queryRows<{ pattern_id: number; n: number }>(
    db,
    sql`select lp.pattern_id, count(*)::int as n
          from log_patterns lp
          join patterns p on p.id = lp.pattern_id
         where lp.project_id = ${projectId} and lp.timestamp >= ${timestamptz(from)} and lp.timestamp < ${timestamptz(to)}
           and p.first_seen >= ${timestamptz(from)} and ${levelFilter(levels, sql`lp.level`)}
         group by lp.pattern_id
         order by n desc, lp.pattern_id
         limit ${limit}`,
  );
}

/**
 * Counts per bucket of the range, per pattern or per level. Patterns are counted from their tags,
 * levels from the logs.
 */
export function bucketCounts(
  db: DbTx,
  projectId: number,
  from: Date,
  to: Date,
  bucketSeconds: number,
  by: 'pattern_id' | 'level',
  levels: LogLevel[],
) {
  const [key, table] = by === 'pattern_id' ? [sql`pattern_id::text`, sql`log_patterns`] : [sql`level`, sql`logs`];
  return queryRows<{ key: string | null; bucket: Date | string; n: number }>(
    db,
    sql`select ${key} as key,
               date_bin(make_interval(secs => ${bucketSeconds}), timestamp, ${timestamptz(from)}) as bucket,
               count(*)::int as n
          from ${table}
         where project_id = ${projectId} and timestamp >= ${timestamptz(from)} and timestamp < ${timestamptz(to)}
           and ${levelFilter(levels)}
         group by 1, 2`,
  );
}

/** Totals per pattern or per level over a period (the baseline of the anomaly test). */
export function periodCounts(
  db: DbTx,
  projectId: number,
  from: Date,
  to: Date,
  by: 'pattern_id' | 'level',
  levels: LogLevel[],
) {
  const [key, table] = by === 'pattern_id' ? [sql`pattern_id::text`, sql`log_patterns`] : [sql`level`, sql`logs`];
  return queryRows<{ key: string | null; n: number }>(
    db,
    sql`select ${key} as key, count(*)::int as n
          from ${table}
         where project_id = ${projectId} and timestamp >= ${timestamptz(from)} and timestamp < ${timestamptz(to)}
           and ${levelFilter(levels)}
         group by 1`,
  );
}

export async function insertAnalysis(db: DbTx, values: typeof analyses.$inferInsert) {
  const [row] = await db.insert(analyses).values(values).returning();
  if (!row) throw new Error('insert returned no analysis');
  return row;
}

export async function latestAnalysis(db: DbTx, projectId: number) {
  const [row] = await db
    .select()
    .from(analyses)
    .where(and(eq(analyses.projectId, projectId)))
    .orderBy(desc(analyses.createdAt), desc(analyses.id))
    .limit(1);
  return row;
}
