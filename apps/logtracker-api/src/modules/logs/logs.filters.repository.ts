import { escapeLike } from '@repo/db';
import { and, eq, getTableColumns, gte, ilike, lt, lte, sql, type SQL, type SQLWrapper } from 'drizzle-orm';
import { logPatterns, logs, type Log, type LogLevel } from '../../db/schema/index.js';
import type { LogCursor } from './logs.schemas.js';

/** The filters of a list of one project's logs, shared by the list, the search and the counts. */
export interface LogFilters {
  level?: LogLevel;
  /** The log's `source`, matched exactly. */
  source?: string;
  from?: Date;
  to?: Date;
  search?: string;
  patternId?: number;
  /** Keyset position: only logs after it in the newest-first order. */
  after?: LogCursor;
  /** Only logs strictly older than this (a search's older slice: logs.indexed.repository). */
  before?: Date;
  /**
   * The project holds a large share of all logs: its condition is left out of the indexes'
   * reach, so that a search finds its matches through its trigram keys alone (which hold the
   * project) rather than and-ed with the project's b-tree (logs.indexed.repository).
   */
  wideProject?: boolean;
  /**
   * The list is a slice of a search (logs.indexed.repository): its text is given to the planner
   * as a sub-select, which it cannot read, so that it takes the default share of a pattern (0.5 %)
   * and and-s the trigram keys with the time index over the slice. With the text itself it
   * estimates any word missing from its sample at its floor (0.01 % of the rows), and then checks
   * the time of every match of the whole day on its row: 4 866 rows for a word in 0.12 % of a
   * 4-million-log day (11 ms), where the slice's 66 cost 4 ms with the time index. A slice of at
   * most eight hours looks up those hours' keys instead (`hours`), and is not hidden.
   */
  slice?: boolean;
  /**
   * The search's matches are found through the project's trigram keys (logs_search_keys_idx,
   * migration 0017): the keys its text is sure to hold, looked up in the project's own posting
   * lists, beside the text itself checked on each row. Only for a text with three letters or
   * digits in a row (hasSearchKeys), and only on the index path: a read of the newest logs in
   * order checks the text alone.
   */
  indexed?: boolean;
  /**
   * The days the project has logs in (from the daily rollups): bounds that change no match and
   * leave the other days' partitions unread. A wide project's search is checked on the rows the
   * index finds, and without them it looked the word up in every day's index, other projects' days
   * included: 68 ms for a word no log holds with 30 days of other projects' logs, where the
   * project's own two days took 5 (measured with the trigram index of the message; with the
   * project's keys, a day without the project's logs answers from its index's first pages).
   */
  days?: { from: Date; to: Date };
  /**
   * The start of the newest hour the project has logs in (the hour rollups), where known: the end
   * of a range open to the future, for the hours a search looks up (searchHours).
   */
  latest?: Date;
  /**
   * The hours (their starts) a bounded search's logs lie in, when they are few (searchHours): its
   * text's keys are looked up with each hour's key (migration 0019), so that only the matches of
   * those hours are read, however many the days hold.
   */
  hours?: Date[];
  /**
   * Its bounds in time are given to the planner as sub-selects (hidden), beside the same bounds
   * widened to whole days (dayBounds), as a slice's are: for a page of a list bounded in time
   * (listCondition), which the planner otherwise sized by statistics older than the newest minutes.
   */
  boundsHidden?: boolean;
}

/** The condition of a filtered list of one project's logs. */
export function where(projectId: number, filters: LogFilters): SQL | undefined {
  return and(
    filters.wideProject ? sql`(${logs.projectId} + 0) = ${projectId}` : eq(logs.projectId, projectId),
    filters.level ? eq(logs.level, filters.level) : undefined,
    // No index holds the source: a list filtered by it walks the newest-first path (the project's
    // (project, time, id) index, or the level's) and checks the source on each row it reads. Sources
    // are few per project and usually common, so the page fills early; an index per source would
    // cost every insert for a filter most lists do not use.
    filters.source ? eq(logs.source, filters.source) : undefined,
    filters.slice || filters.hours || filters.boundsHidden ? and(dayBounds(filters), timeBounds(filters, hidden)) : timeBounds(filters),
    filters.search
      ? filters.slice
        ? sql`${logs.message} ilike (select ${likePattern(filters.search)}::text)`
        : ilike(logs.message, likePattern(filters.search))
      : undefined,
    filters.search && filters.indexed
      ? searchKeys(projectId, filters.search, { once: filters.slice || plannedGenerically(filters), hours: filters.hours })
      : undefined,
    filters.patternId
      ? sql`exists (select 1 from ${logPatterns} lp
                     where lp.project_id = ${projectId} and lp.timestamp = ${logs.timestamp} and lp.log_id = ${logs.id}
                       and lp.pattern_id = ${filters.patternId})`
      : undefined,
    filters.after ? sql`(${logs.timestamp}, ${logs.id}) < (${cursorTime(filters.after)}, ${filters.after.id}::bigint)` : undefined,
  );
}

/**
 * The bounds in time of a filtered list alone: `from`, `to`, `before`, the project's days, and the
 * cursor's time. `bound` writes `from`, `to` and `before` (as they are, or hidden).
 */
function timeBounds(filters: LogFilters, bound: (at: Date) => SQL | Date = (at) => at): SQL | undefined {
  return and(
    filters.from ? gte(logs.timestamp, bound(filters.from)) : undefined,
    filters.to ? lte(logs.timestamp, bound(filters.to)) : undefined,
    filters.before ? lt(logs.timestamp, bound(filters.before)) : undefined,
    ...(filters.days ? [gte(logs.timestamp, filters.days.from), lt(logs.timestamp, filters.days.to)] : []),
    // Implied by the cursor's row comparison (where), but only this form lets PostgreSQL skip the
    // partitions of the days after the cursor.
    filters.after ? sql`${logs.timestamp} <= ${cursorTime(filters.after)}` : undefined,
  );
}

/**
 * A bound in time the planner cannot read (a sub-select), for a search's slice and a search of a
 * few hours (LogFilters.slice, LogFilters.hours), beside the same bounds widened to whole days
 * (dayBounds), which it reads to leave the other days' partitions unplanned. Those searches cover
 * the newest minutes, which are newer than the statistics of a partition logs keep arriving in:
 * with their bounds as values the planner took them for empty, read them whole through the time
 * index and checked each log's text on its row (69 000 logs, 45 ms, for a slice of the newest
 * minute while 4 000 logs a second arrived), where the keys of the text find its few matches.
 * Hidden, the range has the planner's default share of a partition, and the keys lead.
 */
function hidden(at: Date): SQL {
  return sql`(select ${at.toISOString()}::timestamptz)`;
}

const DAY_MS = 86_400_000;

/** The last instant PostgreSQL and Date both write as a plain ISO 8601 timestamp (year 9999). */
const LAST_INSTANT = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * The bounds of a filtered list widened to whole UTC days, the daily partitions': where a statement
 * reads logs it already found again (a page's rows by their key), so that a statement planned for
 * its values plans the partitions of the list's days only, not every day's (1.7 against 0.5 ms of
 * planning for a search of the last hour). Whole days, not timeBounds: the planner reads a range
 * newer than its statistics as holding no log, and with the exact bounds of the newest minutes it
 * probed each of a page's rows through the time index, reading every log of the range 50 times
 * (3.5 s for a page of the newest minute while 4 000 logs a second arrived), not by its key.
 */
export function dayBounds(filters: LogFilters): SQL | undefined {
  const times = (...dates: (Date | undefined)[]) => dates.flatMap((d) => (d && Number.isFinite(d.getTime()) ? [d.getTime()] : []));
  const lows = times(filters.from, filters.days?.from);
  // The end of the day of an inclusive bound (`to`, the cursor's time), and of the day before an
  // exclusive one at midnight (`before`, the project's days).
  const highs = [
    ...times(filters.to, filters.after ? new Date(filters.after.timestamp) : undefined).map((t) => (Math.floor(t / DAY_MS) + 1) * DAY_MS),
    ...times(filters.before, filters.days?.to).map((t) => Math.ceil(t / DAY_MS) * DAY_MS),
  ];
  const low = lows.length > 0 ? Math.floor(Math.max(...lows) / DAY_MS) * DAY_MS : undefined;
  const high = highs.length > 0 ? Math.min(...highs) : undefined;
  return and(
    low !== undefined ? gte(logs.timestamp, new Date(low)) : undefined,
    high !== undefined && high <= LAST_INSTANT ? lt(logs.timestamp, new Date(high)) : undefined,
  );
}

/**
 * Whether a search on the index path runs its generic plan (indexedPage): a list unbounded in time,
 * whose partitions are not pruned as it is planned, and whose planning for its values over every
 * daily partition cost more than running it. A list bounded in time is planned for its values.
 */
export function plannedGenerically(filters: Pick<LogFilters, 'from' | 'to'>): boolean {
  return !filters.from && !filters.to;
}

/** Whether a search text has keys in the project's trigram index: three letters or digits in a row. */
export function hasSearchKeys(search: string): boolean {
  return /[\p{L}\p{N}]{3}/u.test(search);
}

/**
 * The condition the project's trigram keys index answers (LogFilters.indexed): the message's keys
 * hold the keys of the text that are not common in the project's logs (log_search_rare_query_keys,
 * migration 0020: every key where the project has no common ones, or the text only common ones),
 * and with `hours`, the key of one of them, in the same index scan (for the last hour of a
 * 4-million-log day, 0.5 ms to plan and 0.8 to run, where an index scan per hour, or-ed, took 2.3
 * and 2.7). The hours' keys are written as values (hourKey): computed by log_hour_key as the
 * statement is planned, three of them cost a millisecond of planning.
 * `once`: the text's keys are a sub-select, computed once for the whole statement (an InitPlan).
 * A slice hides them from the planner that way, as it hides the text. A list unbounded in time
 * runs the generic plan (plannedGenerically), where the keys are an expression of the statement's
 * parameters, which each partition's index scan computed anew as it started, running the
 * function's queries each time: 30 daily partitions took 11 ms for a rare word where the same plan
 * with the keys computed once took 4. Either way the planner sees no value. A list bounded in time
 * is planned for its values: the planner computes the keys (a stable function) to estimate the
 * condition, as a handful of keys each in a small share of the rows, and each of the list's few
 * partitions computes them as its scan starts. As a sub-select there, the condition was estimated
 * at 0.5 % of the rows, and searches of a 2-million-log project took other plans, 1.5 times as slow.
 */
function searchKeys(projectId: number, search: string, { once = false, hours }: { once?: boolean; hours?: Date[] } = {}): SQL {
  const keys = sql`log_search_rare_query_keys(${projectId}::int, ${search}::text)`;
  const held = sql`log_search_keys(${logs.projectId}, ${logs.message}, ${logs.timestamp})`;
  if (hours && hours.length > 0) {
    return sql`${held} @> ${keys} and ${held} && ${`{${hours.map((hour) => hourKey(projectId, hour)).join(',')}}`}::bigint[]`;
  }
  return sql`${held} @> ${once ? sql`(select ${keys})` : keys}`;
}

export const HOUR_MS = 3_600_000;

/**
 * The key of the hour `at` lies in, in the project's search keys: log_hour_key (migration 0019),
 * `-((project << 32) | hours since 1970)`, as decimal text.
 */
export function hourKey(projectId: number, at: Date): string {
  return String(-((BigInt(projectId) << 32n) | BigInt(Math.floor(at.getTime() / HOUR_MS))));
}

/** The search text is matched literally: %, _ and \ lose their LIKE meaning. */
export function likePattern(search: string): string {
  return `%${escapeLike(search)}%`;
}

export function cursorTime(after: LogCursor): SQL {
  return sql`${after.timestamp}::timestamptz`;
}

/**
 * The row as listed, with its timestamp to the microsecond as text for the cursor: a Date keeps
 * milliseconds, and a cursor cut to the millisecond would skip the logs written (by SQL, by an
 * import) in the rest of that millisecond.
 */
export const listed = {
  ...getTableColumns(logs),
  cursorTime: microseconds(logs.timestamp).as('cursor_time'),
};

/** A timestamp as ISO 8601 text to the microsecond, in UTC. */
export function microseconds(timestamp: SQLWrapper): SQL<string> {
  return sql<string>`to_char(${timestamp} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
}

export type ListedLog = Log & { cursorTime: string };
