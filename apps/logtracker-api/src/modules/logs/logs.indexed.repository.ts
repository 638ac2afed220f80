import { arrayLiteral, withTransaction } from '@repo/db';
import { and, eq, getTableColumns, sql, type SQLWrapper } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { logs, newestFirst } from '../../db/schema/index.js';
import { cursorTime, dayBounds, hasSearchKeys, HOUR_MS, listed, microseconds, plannedGenerically, where, type ListedLog, type LogFilters } from './logs.filters.repository.js';
import { keptSliceStart, type Slice } from './logs.slices.repository.js';
import { SEARCH_WALK_MIN_SHARE, SEARCH_WALK_ROWS, streamedPage, walkRowsFor } from './logs.walk.repository.js';

/**
 * Every match through the project's trigram keys (LogFilters.indexed), counted, and the page of
 * them asked for. The matches are gathered as their keys only (time and id), so counting them and
 * keeping the newest sorts narrow rows; the page's rows are then read whole by their key, in the
 * same statement (a round trip fewer). The matches of a few hours or of a slice are few enough to
 * gather whole, and the page is kept from them. The count runs before the cursor and the offset,
 * so `matched` is the size of the whole filtered list.
 * Index scans (which would read the project in order) and sequential scans are turned off for
 * the gathering, leaving bitmap scans of the keys, and-ed with the b-trees where the planner finds
 * that cheaper. A list bounded in time is planned for its values: its partitions are pruned as it
 * is planned, and the plan can weigh the time index against the text (the newest slice of a
 * search). Any other is the generic plan, planned once per connection (the statement is
 * prepared): planning it for its values over 30 daily partitions of logs took 45 to 70 ms, more
 * than running it. A project holding a large share of the logs (`wideProject`) is checked on the
 * rows the keys find: and-ing them with the project's b-tree would mark every log of the project.
 * Without three letters or digits in a row the text has no key to look up: the planner chooses.
 */
export async function indexedPage(
  db: DbTx,
  projectId: number,
  bounded: LogFilters & { search: string },
  limit: number,
  offset: number,
  { hourKeys = true }: { hourKeys?: boolean } = {},
) {
  const keyed = hasSearchKeys(bounded.search);
  // Bounded to a few hours, the keys of those hours alone: the text as the planner can read it
  // (no hidden text for a slice), whose few matches it has no reason to and with the time index.
  // A range open to the future ends with its last hour, which its keys hold no later log of
  // anyway: the statement is planned over the partitions of those hours only, not the week ahead
  // (2.3 ms of planning for a slice of the last half hour, with the partitions to the end of time).
  const hours = keyed && hourKeys ? searchHours(bounded) : undefined;
  const hoursEnd = hours && hours[hours.length - 1]!.getTime() + HOUR_MS;
  const filters = hoursEnd ? { ...bounded, hours, slice: false, before: new Date(Math.min(bounded.before?.getTime() ?? Infinity, hoursEnd)) } : bounded;
  const condition = where(projectId, { ...filters, after: undefined, indexed: keyed });
  const after = filters.after;
  const afterCursor = (m: { timestamp: SQLWrapper; id: SQLWrapper }) =>
    after ? sql`(${m.timestamp}, ${m.id}) < (${cursorTime(after)}, ${after.id}::bigint)` : undefined;
  // The matches of a few hours or of a slice are few (a few hundred): gathered whole, the page is
  // kept from the rows the search read already, where reading it again by its key cost a third of
  // the statement's buffers (200 of 586 for the last hour of a word in 0.12 % of 4 million logs).
  const few = filters.slice || hours !== undefined;
  const whole = (tx: DbTx) => {
    const fewRows = tx.$with('matching').as(tx.select(getTableColumns(logs)).from(logs).where(condition));
    return tx
      .with(fewRows)
      .select({
        ...fewRows._.selectedFields,
        cursorTime: microseconds(fewRows.timestamp).as('cursor_time'),
        matched: sql<number>`(select count(*) from ${fewRows})`.mapWith(Number).as('matched'),
      })
      .from(fewRows)
      .where(afterCursor(fewRows))
      .orderBy(sql`${fewRows.timestamp} desc nulls last`, sql`${fewRows.id} desc nulls last`)
      .limit(limit)
      .offset(offset);
  };
  const keys = (tx: DbTx) => {
    if (few) return whole(tx);
    const matching = tx.$with('matching').as(tx.select({ timestamp: logs.timestamp, id: logs.id }).from(logs).where(condition));
    const page = tx
      .with(matching)
      .select({ timestamp: matching.timestamp, id: matching.id, matched: sql<number>`(select count(*) from ${matching})`.as('matched') })
      .from(matching)
      .where(afterCursor(matching))
      .orderBy(sql`${matching.timestamp} desc nulls last`, sql`${matching.id} desc nulls last`)
      .limit(limit)
      .offset(offset)
      .as('page');
    // The page's logs read whole by their key, in the same statement: one probe of the primary key
    // per match kept, in the partition of its time only (pruned as it runs), within the list's
    // days (dayBounds: pruned as it is planned).
    const row = tx
      .select(listed)
      .from(logs)
      .where(and(eq(logs.projectId, projectId), sql`${logs.id} = ${page.id}`, sql`${logs.timestamp} = ${page.timestamp}`, dayBounds(filters)))
      .as('row');
    return tx
      .select({ ...row._.selectedFields, matched: sql<number>`${page.matched}`.mapWith(Number) })
      .from(page)
      .innerJoinLateral(row, sql`true`)
      .orderBy(sql`${page.timestamp} desc nulls last`, sql`${page.id} desc nulls last`);
  };
  // Bitmaps of the keys are kept exact (SEARCH_WORK_MEM). A slice (LogFilters.slice) needs no
  // other setting: bounded at both ends in time, with its text hidden, it is planned as a BitmapAnd
  // of the keys and the time index, for its values or generically (the plan the statement keeps
  // after five runs, pruned as it runs).
  // The settings and the search go to the server together (one write, one round trip: the
  // driver pipelines statements issued at once on a connection), which runs them in order.
  const found = keyed
    ? await withTransaction(db, async (tx) => {
        const [, rows] = await Promise.all([
          tx.execute(
            filters.slice
              ? sql`select set_config('work_mem', ${SEARCH_WORK_MEM}, true)`
              : sql`select set_config('enable_indexscan', 'off', true), set_config('enable_seqscan', 'off', true),
                           set_config('plan_cache_mode', ${plannedGenerically(filters) ? 'force_generic_plan' : 'force_custom_plan'}, true),
                           set_config('work_mem', ${SEARCH_WORK_MEM}, true)`,
          ),
          keys(tx),
        ]);
        return rows;
      })
    : await keys(db);
  const first = found[0];
  return {
    rows: found.map(({ matched: _, ...log }) => log as ListedLog),
    matched: first ? first.matched : offset === 0 && !after ? 0 : undefined,
  };
}

/**
 * The memory a search's bitmaps may take before they turn lossy (a page marked, not its rows): a
 * lossy page's every row is checked again, the keys computed anew from its message (9 µs a row),
 * and a minute holding 1.8 million copies of the same batches cost 34 s that way with the default
 * 4 MB. Exact, a day's partition of 10 million logs takes about 13 MB of bitmap.
 */
const SEARCH_WORK_MEM = '32MB';

/**
 * The most hours whose keys a search looks up: each adds a posting list the index scan walks beside
 * the text's (three took 0.8 ms for the last hour of a 4-million-log day, measured with no more); a
 * longer range looks up its text's keys alone.
 */
const SEARCH_HOURS_MAX = 8;

/**
 * The hours (their starts) the logs of a search bounded in time lie in, when there are at most
 * SEARCH_HOURS_MAX: from `from` to the nearest of `to`, `before` and the cursor; a range open to
 * the future ends with the newest hour the project has logs in (LogFilters.latest), and the hour
 * after this one at least, for a log stored after the rollups were read. Undefined when the range
 * has no start, its end is unknown, or it spans more hours.
 */
export function searchHours(filters: LogFilters): Date[] | undefined {
  if (!filters.from) return undefined;
  const ends = [
    filters.to?.getTime(),
    filters.before && filters.before.getTime() < LATEST.getTime() ? filters.before.getTime() - 1 : undefined,
    filters.after ? Date.parse(filters.after.timestamp) : undefined,
  ].filter((t): t is number => t !== undefined && Number.isFinite(t));
  const end = ends.length > 0 ? Math.min(...ends) : filters.latest ? Math.max(Date.now() + HOUR_MS, filters.latest.getTime()) : undefined;
  if (end === undefined) return undefined;
  const first = Math.floor(filters.from.getTime() / HOUR_MS);
  const last = Math.floor(end / HOUR_MS);
  if (last < first || last - first + 1 > SEARCH_HOURS_MAX) return undefined;
  return Array.from({ length: last - first + 1 }, (_, i) => new Date((first + i) * HOUR_MS));
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
 * The rows of a slice of a search: twice what the share says a page needs, within these. The
 * minimum is also the first slice of a search whose share is unknown (a probe). Beyond the
 * maximum the time index's part of a slice costs as much as fetching the matches of a 4-million-log
 * day that a slice fills a page from.
 */
const SLICE_ROWS = { min: 10_000, max: 120_000 };

/**
 * How many logs of a slice cost what one match fetched through the index alone costs: the time
 * index marks each log of the slice in a bitmap (0.07 µs a log), the index alone fetches and
 * checks each match of the days on its row (2.3 µs a row on a 4-million-log day of one project;
 * 4.1 µs a match with the trigram index of the message beside neighbours, whose matches it fetched
 * too: 3 282 rows for 2 474 matches, 13.5 ms). Fetching every match of a word in 0.12 % of 2
 * million logs took 20.4 ms (p50) through the API, a slice of 83 000 logs 13.6 ms; with the
 * project's keys (migration 0017) the neighbours' rows are gone, and the figure was not measured
 * again.
 */
const SLICE_ROWS_PER_MATCH = 40;

/**
 * The planner's share of a substring found in none of its sampled messages is its floor, 0.01 % of
 * the rows (patternsel), and a word it found in its sample of 100 is 1 % or more. A share below
 * this says nothing of the word but that it is not common: the first slice probes it.
 */
const UNKNOWN_SHARE = 0.001;

/** Whether the planner's share says something of the word (UNKNOWN_SHARE). */
export function isKnownShare(share: number): boolean {
  return share > UNKNOWN_SHARE;
}

/**
 * Lists shorter than this fetch every match of a word whose share is unknown: below, a probe wasted
 * on a rare word (2–4 ms) costs about what it saves a word in 0.1 % of the logs (2 000 rows to
 * check, 4.6 ms). A rare word in a project of a million logs over 30 days took 12.9 ms with it.
 */
const PROBED_LIST_ROWS = 2_000_000;

/** The logs a slice should hold for `wanted` matches at this share: twice the expected, within SLICE_ROWS. */
function sliceRows(wanted: number, share: number, max = SLICE_ROWS.max): number {
  return Math.min(max, Math.max(SLICE_ROWS.min, Math.ceil((2 * wanted) / share)));
}

/**
 * Matches, in pages, beyond which a slice is read whatever its logs (SLICE_ROWS_PER_MATCH): a slice
 * of a project's steady flow looks up its hours' keys (SLICE_HOURS_SPAN), which find the matches
 * of those hours and no more (about twice a page), where fetching every match costs about 3 µs
 * each. The uncommon word of the growth bench (0.12 %) took 11.1 ms (p50) fetched whole at
 * 1 000 000 logs (1 200 matches) against 7.0 ms through a slice at 2 000 000, and 8.4 ms fetched
 * whole at 250 000 (300 matches).
 */
const SLICED_PAGES = 12;

/**
 * Whether slices are worth reading for a page of `limit` at this share of a list of `listRows`:
 * when the share is unknown, in a list long enough that fetching every match could cost more than
 * a probe of SLICE_ROWS.min logs; else when a slice fills the page and costs less than fetching
 * every match (SLICE_ROWS_PER_MATCH), or the matches are SLICED_PAGES pages or more. `known`:
 * whether the share says something of the word (the planner's above UNKNOWN_SHARE, or the one its
 * last search found: learnedShare).
 */
export function worthSlicing(limit: number, share: number, listRows: number, known = isKnownShare(share)): boolean {
  if (!known) return listRows >= PROBED_LIST_ROWS;
  const matches = share * listRows;
  return share * SLICE_ROWS.max >= limit && (sliceRows(limit, share) <= SLICE_ROWS_PER_MATCH * matches || matches >= SLICED_PAGES * limit);
}

/**
 * The upper bound of a first slice (the last instant of year 9999): every slice is bounded at both
 * ends, so that all share one statement and its generic plan sees a range.
 */
const LATEST = new Date('9999-12-31T23:59:59.999Z');

type SearchPage = { rows: ListedLog[]; total: number; estimated: boolean };

/**
 * A slice looks up its hours' keys (searchHours) when those hours hold at most this many times its
 * own logs, and and-s its text's keys with the time index otherwise: the hours' keys find every
 * match of the hours, and a slice of the newest seconds of a project taking 4 000 logs a second
 * fetched the 8 600 matches of its hour's 2 million logs to keep 43 (57 ms, against 20 through
 * the time index).
 */
const SLICE_HOURS_SPAN = 4;

/**
 * A first or cursor page of a search whose matches are too few among the newest logs for a read
 * of them in order (the walk) and too many to fetch all: the newest slice of time holding about
 * what the page needs (from the minute rollups, exact per project and level), or SLICE_ROWS.min
 * logs where the share is unknown, searched through the trigram keys of its hours (searchHours) or,
 * a slice of more, and-ed with the time index (LogFilters.slice): either fetches the slice's
 * matches only. A slice that comes short is followed
 * by one more, sized by the share of matches it found, where that costs less than fetching the
 * older matches. A full page
 * is exact (every log after the slice's start was searched), its total estimated from the share
 * of matches in the slices; a page still short is completed from the older logs, and then counted
 * exactly. Whether slices are worth reading at all is the caller's (worthSlicing). Undefined when
 * a known share says a slice would not fill the page, or the rollups cannot
 * size one (bounds older than they are kept, a pattern or source filter, a small project).
 */
export async function slicedPage(
  db: DbTx,
  projectId: number,
  filters: LogFilters & { search: string },
  limit: number,
  share: number,
  list: { listRows: number; scope: Pick<LogFilters, 'wideProject' | 'days' | 'latest'>; known?: boolean; newest?: number },
): Promise<SearchPage | undefined> {
  const { listRows } = list;
  const known = list.known ?? isKnownShare(share);
  if ((known && share * SLICE_ROWS.max < limit) || filters.patternId || filters.source || !hasSearchKeys(filters.search)) return undefined;
  // The share of matches a read of the newest logs found (list.newest) sizes the first slice: it
  // was measured on the logs the slice starts with, where the estimate that sent that read may
  // have priced the text ten times too common. That estimate still decides whether the older logs
  // are read in order after a short slice, and sizes the slice where the rollups hold fewer logs
  // than the measured share asks for.
  const sized = known ? sliceRows(limit, share) : SLICE_ROWS.min;
  const measured = list.newest ? sliceRows(limit, list.newest) : sized;
  const first = (await keptSliceStart(db, projectId, filters, measured)) ?? (measured > sized ? await keptSliceStart(db, projectId, filters, sized) : undefined);
  if (!first || (filters.from && first.start <= filters.from)) return undefined;
  let slice: Slice = first;
  const rows: ListedLog[] = [];
  let matched = 0;
  for (let end: Date | undefined, round = 1; ; round++) {
    const found = await indexedPage(
      db,
      projectId,
      { ...filters, from: slice.start, before: end ?? LATEST, slice: true, latest: list.scope.latest },
      limit - rows.length,
      0,
      { hourKeys: slice.hourRows <= SLICE_HOURS_SPAN * slice.rowsBelow },
    );
    rows.push(...found.rows);
    matched += found.matched ?? 0;
    if (rows.length === limit) {
      // Every match from the slice's start on was counted; the older logs hold the same share.
      const older = Math.max(0, listRows - slice.rowsSince);
      return { rows, total: Math.max(limit, matched + Math.round((matched / Math.max(1, slice.rowsSince)) * older)), estimated: true };
    }
    end = slice.start;
    // One more slice when the matches seen say it fills the page at less than fetching the older
    // matches costs, else the rest, counted.
    const seen = rows.length / slice.rowsBelow;
    const more: number = round === 1 && rows.length > 0 ? sliceRows(limit - rows.length, seen, Infinity) : Infinity;
    const olderMatches = seen * Math.max(0, listRows - slice.rowsSince);
    const next: Slice | undefined =
      more <= SLICE_ROWS.max && more <= SLICE_ROWS_PER_MATCH * olderMatches ? await keptSliceStart(db, projectId, filters, slice.rowsBelow + more) : undefined;
    if (!next || (filters.from && next.start <= filters.from)) {
      // A share the planner or the last search knows, above what the slices saw: the newest logs
      // are not like the older ones (a shipper's batch sent again and again, say), and the older
      // logs may hold far more matches than the slices suggest. Fetching every one of them cost
      // 25 s for a word in a tenth of 20 days of logs; read the older logs in order first, as far
      // as that share says a page needs.
      const olderRows = Math.max(0, listRows - slice.rowsSince);
      const walked = known && share > seen ? await walkOlder(db, projectId, filters, end, limit - rows.length, share, olderRows) : undefined;
      if (walked && rows.length + walked.rows.length === limit) {
        return {
          rows: [...rows, ...walked.rows],
          total: matched + Math.max(walked.rows.length, Math.round(walked.share * olderRows)),
          estimated: true,
        };
      }
      // The slices and-ed the trigram keys with the time index, led by the project; the rest is the
      // keys' alone when the project is a large share of the logs.
      const rest = await indexedPage(db, projectId, { ...filters, before: end, ...list.scope }, limit - rows.length, 0);
      return { rows: [...rows, ...rest.rows], total: matched + (rest.matched ?? 0), estimated: false };
    }
    slice = next;
  }
}

/**
 * The first `wanted` matches among the older logs of a search, those before `end`, read in index
 * order as far as `share` says they need (within SEARCH_WALK_ROWS); undefined when that share is
 * too low for such a read, or the older matches it implies are few enough to fetch (each costs
 * about two rows read in order: SEARCH_WALK_MIN_SHARE).
 */
async function walkOlder(db: DbTx, projectId: number, filters: LogFilters & { search: string }, end: Date, wanted: number, share: number, olderRows: number) {
  if (share < SEARCH_WALK_MIN_SHARE) return undefined;
  const walkRows = Math.min(SEARCH_WALK_ROWS.max, walkRowsFor(wanted, share));
  if (2 * share * olderRows <= walkRows) return undefined;
  return streamedPage(db, where(projectId, { ...filters, search: undefined, before: end }), filters.search, walkRows, wanted);
}
