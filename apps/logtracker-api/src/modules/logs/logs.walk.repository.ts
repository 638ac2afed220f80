import { getTableColumns, ilike, sql, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { logs, newestFirst } from '../../db/schema/index.js';
import { likePattern, microseconds, type ListedLog } from './logs.filters.repository.js';

// A search's read of the newest logs in index order (the walk), checking the text on each row:
// the cheaper plan for a text common among them (logs.search.repository), and for the older logs
// after a slice of the newest came short (logs.indexed.repository). A row's time for the cursor is
// written out for the matches only: for every row read, it was a quarter of a walk (3.5 of 14 ms
// over the 7 660 newest logs for a page of a word in 0.6 % of them).

/**
 * A search reads the newest logs in index order when the planner expects at least this share of
 * them to match (a page within 10 000 rows); below, the trigram index finds the matches. About
 * where the two cost the same on a million-log project: reading a row in index order costs about
 * half of finding, fetching and sorting a match.
 */
export const SEARCH_WALK_MIN_SHARE = 0.005;

/** Bounds of that read, in rows: twice what the estimate says a page needs, within these. */
export const SEARCH_WALK_ROWS = { min: 2_000, max: 20_000 };

/**
 * The logs a walk reads for `wanted` matches at this share: twice the expected, at least
 * SEARCH_WALK_ROWS.min (the caller caps it at the max, or weighs it against the max).
 */
export function walkRowsFor(wanted: number, share: number): number {
  return Math.max(SEARCH_WALK_ROWS.min, Math.ceil((2 * wanted) / share));
}

/** A page read from the newest logs, and the share of them that matched. */
export interface NewestRead {
  rows: ListedLog[];
  share: number;
}

/**
 * The first `limit` matches among the `walkRows` newest logs that pass the other filters, read in
 * index order and no further than the last of them (row_number streams, the scan stops): the page,
 * and the share of matches among the logs read.
 */
export async function streamedPage(db: DbTx, others: SQL | undefined, search: string, walkRows: number, limit: number): Promise<NewestRead> {
  const read = sql<number>`row_number() over (order by ${logs.timestamp} desc nulls last, ${logs.id} desc nulls last)`.as('read');
  const newest = db.select({ ...getTableColumns(logs), read }).from(logs).where(others).orderBy(...newestFirst).limit(walkRows).as('newest');
  const found = await db
    .select({ ...newest._.selectedFields, cursorTime: microseconds(newest.timestamp).as('cursor_time') })
    .from(newest)
    .where(ilike(newest.message, likePattern(search)))
    .orderBy(sql`${newest.timestamp} desc nulls last`, sql`${newest.id} desc nulls last`)
    .limit(limit);
  const rows = found.map(({ read: _, ...row }) => row as ListedLog);
  // A full page: its matches over the logs read to fill it; else every match among the logs read.
  const share = rows.length === limit ? limit / Number(found.at(-1)?.read) : rows.length / walkRows;
  return { rows, share };
}

/**
 * The matches among the `walkRows` newest logs that pass the other filters: the page asked for,
 * how many there were in all (0 when the page is empty: the offset may have passed them), and
 * their share.
 */
export async function walkedPage(db: DbTx, others: SQL | undefined, search: string, walkRows: number, limit: number, offset: number) {
  const newest = db.select(getTableColumns(logs)).from(logs).where(others).orderBy(...newestFirst).limit(walkRows).as('newest');
  const found = await db
    .select({ ...newest._.selectedFields, cursorTime: microseconds(newest.timestamp).as('cursor_time'), matched: sql<number>`count(*) over ()`.as('matched') })
    .from(newest)
    .where(ilike(newest.message, likePattern(search)))
    .orderBy(sql`${newest.timestamp} desc nulls last`, sql`${newest.id} desc nulls last`)
    .limit(limit)
    .offset(offset);
  const matched = Number(found[0]?.matched ?? 0);
  return { rows: found.map(({ matched: _, ...row }) => row as ListedLog), matched, share: matched / walkRows };
}
