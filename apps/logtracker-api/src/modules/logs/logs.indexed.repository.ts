import { arrayLiteral, queryRows, withTransaction } from '@repo/db';
import { and, eq, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { logLevelCounts, logs, newestFirst, ROLLUP_KEEP_DAYS } from '../../db/schema/index.js';
import { cursorTime, listed, microseconds, where, type ListedLog, type LogFilters } from './logs.filters.repository.js';

/**
 * Every match through the trigram index, counted, and the page of them asked for. The matches are
 * gathered as their keys only (time and id), so counting them and keeping the newest sorts narrow
 * rows; the page's rows are then read whole by their key (the time to the microsecond, as the
 * cursor keeps it). The count runs before the cursor and
 * the offset, so `matched` is the size of the whole filtered list.
 * Index scans (which would read the project in order) and sequential scans are turned off for
 * the gathering, leaving bitmap scans of the trigram index, and-ed with the b-trees where the
 * planner finds that cheaper. A list bounded in time is planned for its values: its partitions
 * are pruned as it is planned, and the plan can weigh the time index against the text (the
 * newest slice of a search). Any other is the generic plan, planned once per connection (the
 * statement is prepared): planning it for its values over 30 daily partitions of logs took 45 to
 * 70 ms, more than running it. A project holding a large share of the logs (`wideProject`) is
 * checked on the rows the trigram index finds: and-ing the trigrams with the project's b-tree read
 * every log of the project (3 170 pages for a rare word in one of five projects, 1 590 without).
 * Without three letters or digits in a row the trigram index has nothing to look up, and forcing
 * it would read all of it: the planner chooses then.
 */
export async function indexedPage(db: DbTx, projectId: number, filters: LogFilters & { search: string }, limit: number, offset: number) {
  const matching = db
    .$with('matching')
    .as(db.select({ timestamp: logs.timestamp, id: logs.id }).from(logs).where(where(projectId, { ...filters, after: undefined })));
  const after = filters.after;
  const keys = (tx: DbTx) => {
    const page = tx
      .with(matching)
      .select({ timestamp: matching.timestamp, id: matching.id, matched: sql<number>`(select count(*) from ${matching})`.as('matched') })
      .from(matching)
      .where(after ? sql`(${matching.timestamp}, ${matching.id}) < (${cursorTime(after)}, ${after.id}::bigint)` : undefined)
      .orderBy(sql`${matching.timestamp} desc nulls last`, sql`${matching.id} desc nulls last`)
      .limit(limit)
      .offset(offset)
      .as('page');
    // The time as text for the page's rows only, not for every match.
    return tx
      .select({ cursorTime: microseconds(page.timestamp), id: page.id, matched: sql<number>`${page.matched}`.mapWith(Number) })
      .from(page)
      .orderBy(sql`${page.timestamp} desc nulls last`, sql`${page.id} desc nulls last`);
  };
  const found = /[\p{L}\p{N}]{3}/u.test(filters.search)
    ? await withTransaction(db, async (tx) => {
        await tx.execute(
          sql`select set_config('enable_indexscan', 'off', true), set_config('enable_seqscan', 'off', true),
                     set_config('plan_cache_mode', ${filters.from || filters.to ? 'force_custom_plan' : 'force_generic_plan'}, true)`,
        );
        return keys(tx);
      })
    : await keys(db);
  const first = found[0];
  return {
    rows: await rowsByKey(db, projectId, found),
    matched: first ? first.matched : offset === 0 && !after ? 0 : undefined,
  };
}

/**
 * The logs of these keys, whole, newest first: one probe of the primary key per id, in the
 * partitions of the keys' times only (ids are unique: the times serve to skip the other days).
 */
export async function rowsByKey(db: DbTx, projectId: number, keys: { cursorTime: string; id: number }[]): Promise<ListedLog[]> {
  if (keys.length === 0) return [];
  return db
    .select(listed)
    .from(logs)
    .where(
      and(
        eq(logs.projectId, projectId),
        sql`${logs.id} = any(${arrayLiteral(keys.map((k) => k.id))}::bigint[])`,
        sql`${logs.timestamp} = any(${arrayLiteral(keys.map((k) => k.cursorTime))}::timestamptz[])`,
      ),
    )
    .orderBy(...newestFirst);
}

/**
 * The rows of a slice of a search: twice what the share says a page needs, within these. Beyond
 * the maximum (about an hour of a 4-million-log day) the planner stops and-ing the time index with
 * the trigram index, and a slice costs as much as the whole.
 */
const SLICE_ROWS = { min: 10_000, max: 120_000 };

/**
 * How many logs of a slice cost what one match fetched through the trigram index alone costs: the
 * time index marks each log of the slice in a bitmap (1 µs a log where the slice's logs are spread
 * over the heap, as logs timestamped out of order are), the trigram index fetches and checks each
 * match (3 µs); measured on a 4-million-log day, a word in 0.12 % of it.
 */
const SLICE_ROWS_PER_MATCH = 2;

/** The logs a slice should hold for `wanted` matches at this share: twice the expected, within SLICE_ROWS. */
function sliceRows(wanted: number, share: number, max = SLICE_ROWS.max): number {
  return Math.min(max, Math.max(SLICE_ROWS.min, Math.ceil((2 * wanted) / Math.max(share, 1e-9))));
}

/**
 * Whether a slice is worth reading for a page of `limit` at this share of a list of `listRows`:
 * cheaper than fetching every match only when it is not much longer than their number.
 */
export function worthSlicing(limit: number, share: number, listRows: number): boolean {
  return share * SLICE_ROWS.max >= limit && sliceRows(limit, share) <= SLICE_ROWS_PER_MATCH * share * listRows;
}

type SearchPage = { rows: ListedLog[]; total: number; estimated: boolean };
type Slice = { start: Date; rowsSince: number; rowsBelow: number };

/**
 * A first or cursor page of a search whose matches are too few among the newest logs for a read
 * of them in order (the walk) and too many to fetch all: the newest slice of time holding about
 * what the page needs (from the minute rollups, exact per project and level), searched through
 * the trigram index and-ed with the time index, which fetches the slice's matches only. A slice
 * that comes short is followed by one more, sized by the share of matches it found. A full page
 * is exact (every log after the slice's start was searched), its total estimated from the share
 * of matches in the slices; a page still short is completed from the older logs, and then counted
 * exactly. Undefined when the share says a slice would not fill the page, or the rollups cannot
 * size one (bounds older than they are kept, a pattern or source filter, a small project).
 */
export async function slicedPage(
  db: DbTx,
  projectId: number,
  filters: LogFilters & { search: string },
  limit: number,
  share: number,
  list: { listRows: number; wideProject: boolean },
): Promise<SearchPage | undefined> {
  const { listRows } = list;
  if (share * SLICE_ROWS.max < limit || filters.patternId || filters.source || !/[\p{L}\p{N}]{3}/u.test(filters.search)) return undefined;
  const first = await sliceStart(db, projectId, filters, sliceRows(limit, share));
  if (!first || (filters.from && first.start <= filters.from)) return undefined;
  let slice: Slice = first;
  const rows: ListedLog[] = [];
  let matched = 0;
  for (let end: Date | undefined, round = 1; ; round++) {
    const found = await indexedPage(db, projectId, { ...filters, from: slice.start, before: end }, limit - rows.length, 0);
    rows.push(...found.rows);
    matched += found.matched ?? 0;
    if (rows.length === limit) {
      // Every match from the slice's start on was counted; the older logs hold the same share.
      const older = Math.max(0, listRows - slice.rowsSince);
      return { rows, total: Math.max(limit, matched + Math.round((matched / Math.max(1, slice.rowsSince)) * older)), estimated: true };
    }
    end = slice.start;
    // One more slice when the matches seen say it fills the page, else the rest, counted.
    const more: number = round === 1 && rows.length > 0 ? sliceRows(limit - rows.length, rows.length / slice.rowsBelow, Infinity) : Infinity;
    const next: Slice | undefined = more <= SLICE_ROWS.max ? await sliceStart(db, projectId, filters, slice.rowsBelow + more) : undefined;
    if (!next || (filters.from && next.start <= filters.from)) {
      // The slices and-ed the trigrams with the time index, led by the project; the rest is the
      // trigram index's alone when the project is a large share of the logs.
      const rest = await indexedPage(db, projectId, { ...filters, before: end, wideProject: list.wideProject }, limit - rows.length, 0);
      return { rows: [...rows, ...rest.rows], total: matched + (rest.matched ?? 0), estimated: false };
    }
    slice = next;
  }
}

/**
 * The start of the newest minutes holding at least `rows` logs of the list before its cursor or
 * `to` (by the minute rollups, kept ROLLUP_KEEP_DAYS.minute days), and how many logs of the list
 * there are from that start on, before the cursor or not (`rowsSince`), and before it (`rowsBelow`).
 */
async function sliceStart(db: DbTx, projectId: number, filters: LogFilters, rows: number): Promise<Slice | undefined> {
  const bounds = [filters.to?.getTime(), filters.after ? Date.parse(filters.after.timestamp) : undefined].filter((t): t is number => t !== undefined);
  const upper = bounds.length > 0 ? new Date(Math.min(...bounds)) : undefined;
  const kept = new Date(Date.now() - ROLLUP_KEEP_DAYS.minute * 86_400_000 + 3_600_000);
  const [found] = await queryRows<{ bucket: string | Date; since: number | string; below: number | string }>(
    db,
    sql`select bucket, since, below from (
          select bucket,
                 sum(case when ${filters.to ? sql`bucket <= ${filters.to.toISOString()}::timestamptz` : sql`true`} then n else 0 end)
                   over (order by bucket desc) as since,
                 sum(case when ${upper ? sql`bucket <= ${upper.toISOString()}::timestamptz` : sql`true`} then n else 0 end)
                   over (order by bucket desc) as below
            from (select bucket, sum(count) as n from ${logLevelCounts}
                   where project_id = ${projectId} and grain = 'minute' and bucket >= ${kept.toISOString()}::timestamptz
                     ${filters.level ? sql`and level = ${filters.level}` : sql``}
                   group by bucket) as minutes) as running
         where below >= ${rows}
         order by bucket desc limit 1`,
  );
  if (!found) return undefined;
  return { start: new Date(found.bucket), rowsSince: Number(found.since), rowsBelow: Number(found.below) };
}
