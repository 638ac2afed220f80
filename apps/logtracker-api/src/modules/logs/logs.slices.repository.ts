import { queryRows } from '@repo/db';
import { sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { logLevelCounts, ROLLUP_KEEP_DAYS } from '../../db/schema/index.js';
import { KEPT_ESTIMATE_MS, keptPerHandle } from './logs.counts.repository.js';
import type { LogFilters } from './logs.filters.repository.js';

/**
 * Where a search's slice of the newest logs starts (slicedPage, logs.indexed.repository.ts): read
 * from the minute rollups, and kept a few seconds.
 */
export type Slice = { start: Date; rowsSince: number; rowsBelow: number; hourRows: number };

/** Slices' starts kept (keptSliceStart), per database handle, by what they depend on. */
const keptSlices = keptPerHandle<Promise<Slice | undefined>>(KEPT_ESTIMATE_MS, { untilNewStatistics: true });

/**
 * sliceStart, kept as long as the planner's estimates (KEPT_ESTIMATE_MS) under the project, the
 * level, the list's upper bounds and the logs asked for: a search run again (a refresh, a
 * dashboard, the same text paged) reads its slice without summing the rollups again, a statement
 * and a round trip fewer. A start kept while logs arrive is older than one read now: its slice
 * still runs to the newest logs, with a few more logs than it needs.
 */
export function keptSliceStart(db: DbTx, projectId: number, filters: LogFilters, rows: number): Promise<Slice | undefined> {
  const key = JSON.stringify([projectId, filters.level ?? null, filters.to?.getTime() ?? null, filters.after?.timestamp ?? null, rows]);
  const found = keptSlices.get(db, key);
  if (found) return found;
  const entry = keptSlices.set(db, key, sliceStart(db, projectId, filters, rows));
  // A failed read is not kept (unless a newer one took its place).
  entry.value.catch(() => keptSlices.forget(db, key, entry));
  return entry.value;
}

/**
 * The start of the newest minutes holding at least `rows` logs of the list before its cursor or
 * `to` (by the minute rollups, kept ROLLUP_KEEP_DAYS.minute days), and how many logs of the list
 * there are from that start on, before the cursor or not (`rowsSince`), before it (`rowsBelow`),
 * and before it from the start of that start's hour (`hourRows`: what its hours' keys would find).
 */
export async function sliceStart(db: DbTx, projectId: number, filters: LogFilters, rows: number): Promise<Slice | undefined> {
  const bounds = [filters.to?.getTime(), filters.after ? Date.parse(filters.after.timestamp) : undefined].filter((t): t is number => t !== undefined);
  const upper = bounds.length > 0 ? new Date(Math.min(...bounds)) : undefined;
  const kept = new Date(Date.now() - ROLLUP_KEEP_DAYS.minute * 86_400_000 + 3_600_000);
  const level = filters.level ? sql`and level = ${filters.level}` : sql``;
  const [found] = await queryRows<{ bucket: string | Date; since: number | string; below: number | string; hour_rows: number | string | null }>(
    db,
    // Minutes summed in the index's order, newest first, and the running sums streamed (no sort):
    // the read stops at the slice's start, a few dozen minutes of a busy project, instead of
    // summing every minute kept (5 700 rows, 3.6 ms, for a day of four levels). The window emits
    // its rows in its own order, newest first; an outer ORDER BY made the planner sort them all.
    // The hour's logs are the slice's and those of the minutes before it within its hour: a range
    // bounded at both ends, which the planner reads through the index, where the range open above
    // (to the cursor, or to the end) was priced at a third of the table and read whole by a
    // sequential scan (303 buffers, every project's minutes kept, against 22).
    sql`select bucket, since, below,
               below + (select coalesce(sum(count), 0) from ${logLevelCounts}
                 where project_id = ${projectId} and grain = 'minute'
                   and bucket >= date_bin('1 hour', running.bucket, timestamptz '1970-01-01 00:00:00+00') and bucket < running.bucket ${level}) as hour_rows
          from (
          select bucket,
                 sum(case when ${filters.to ? sql`bucket <= ${filters.to.toISOString()}::timestamptz` : sql`true`} then n else 0 end)
                   over (order by bucket desc rows unbounded preceding) as since,
                 sum(case when ${upper ? sql`bucket <= ${upper.toISOString()}::timestamptz` : sql`true`} then n else 0 end)
                   over (order by bucket desc rows unbounded preceding) as below
            from (select bucket, sum(count) as n from ${logLevelCounts}
                   where project_id = ${projectId} and grain = 'minute' and bucket >= ${kept.toISOString()}::timestamptz
                     ${level}
                   group by bucket order by bucket desc) as minutes) as running
         where below >= ${rows}
         limit 1`,
  );
  if (!found) return undefined;
  const rowsBelow = Number(found.below);
  return { start: new Date(found.bucket), rowsSince: Number(found.since), rowsBelow, hourRows: Math.max(rowsBelow, Number(found.hour_rows ?? 0)) };
}
