import { queryRows } from '@repo/db';
import { sql, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { logLevelCounts, logs, projects, ROLLUP_KEEP_DAYS } from '../../db/schema/index.js';
import { where, type LogFilters } from './logs.filters.repository.js';

/** Beyond this many matches, counting exactly costs more than the page itself: estimate instead. */
export const EXACT_COUNT_LIMIT = 10_000;

/**
 * The planner's cost (its units, about one page read each) above which a search is not counted
 * exactly. Counting a search reads every candidate row, about 4 ms per 1 000 units here: a rare
 * word in a million-log project costs about 1 000; `gateway` among the last hour's warnings of a
 * burst (10 000 matches in 30 000 candidates) costs 8 000 and took 34 ms, more than the page's
 * whole budget; a common word combined with a level costs 25 000 and takes half a second. Beyond
 * this the total is the estimate, marked as one.
 */
const EXACT_COUNT_MAX_COST = 2_500;

/** Days of logs the daily rollups cover for certain: they are kept 62 days (maintenance), with a margin. */
const ROLLUP_DAYS = ROLLUP_KEEP_DAYS.day - 2;

/**
 * The exact size of a list filtered by level at most, summed from the daily rollups, which the
 * log triggers keep exact: a read of a few dozen rows where counting the logs plans over every
 * partition. Undefined when the rollups may not cover the project's logs (a retention longer than
 * they are kept), or the list has other filters (a source among them: the level rollups do not
 * hold it).
 */
export async function rollupCount(db: DbTx, projectId: number, filters: LogFilters): Promise<number | undefined> {
  return (await rollupSummary(db, projectId, filters, false)).count;
}

/** The first and last day a project has logs in, by the daily rollups. */
export interface RollupDays {
  first: Date;
  last: Date;
}

/** Whether the daily level rollups count the list `filters`: filtered by level at most. */
function countedByRollups(filters: LogFilters): boolean {
  return !(filters.from || filters.to || filters.search || filters.patternId || filters.source);
}

/**
 * rollupCount of the list `filters` (none: no count), and with `days` the first and last day the
 * project has logs in (null when the rollups cannot tell: a retention longer than they are kept,
 * or no logs) and the start of the newest hour it has logs in (`latest`, by the hour rollups: the
 * end of a search's range open to the future, LogFilters.latest), read in the same statement: a
 * search needs them all, and each round trip costs more than any of the reads.
 */
export async function rollupSummary(
  db: DbTx,
  projectId: number,
  filters: LogFilters | undefined,
  days: boolean,
): Promise<{ count?: number; days?: RollupDays | null; latest?: Date }> {
  const counted = filters !== undefined && countedByRollups(filters);
  if (!counted && !days) return {};
  const covered = sql`p.retention_days <= ${ROLLUP_DAYS}`;
  const dayRows = sql`from ${logLevelCounts} c where c.project_id = p.id and c.grain = 'day' and ${covered}`;
  const [row] = await queryRows<{ n: number | string | null; first: string | Date | null; last: string | Date | null; latest: string | Date | null }>(
    db,
    sql`select ${
      counted
        ? sql`case when ${covered} then
                (select coalesce(sum(c.count), 0) from ${logLevelCounts} c
                  where c.project_id = p.id and c.grain = 'day' ${filters.level ? sql`and c.level = ${filters.level}` : sql``})
              end`
        : sql`null`
    } as n,
          ${days ? sql`(select min(c.bucket) ${dayRows})` : sql`null`} as first,
          ${days ? sql`(select max(c.bucket) ${dayRows})` : sql`null`} as last,
          ${days ? sql`(select max(c.bucket) from ${logLevelCounts} c where c.project_id = p.id and c.grain = 'hour')` : sql`null`} as latest
          from ${projects} p where p.id = ${projectId}`,
  );
  const count = counted && row?.n !== null && row?.n !== undefined ? Number(row.n) : undefined;
  if (!days) return { count };
  return {
    count,
    days: row?.first && row.last ? { first: new Date(row.first), last: new Date(row.last) } : null,
    ...(row?.latest ? { latest: new Date(row.latest) } : {}),
  };
}

const DAY_MS = 86_400_000;

/**
 * The days holding the logs [offset, offset + limit) of a list filtered by level at most, and how
 * many logs the newer days hold (`skipped`), from the daily rollups, which the log triggers keep
 * exact per project, day and level (as rollupCount): a deep page then reads the partitions of
 * those days alone. Reading the 10 000th log through every day's index in order merged the heads of
 * 40 partitions for each log skipped (3.1 ms of execution, 203 buffers, where the one day that held
 * them took 1.75 ms and 69). Undefined when the rollups cannot tell: other filters, a retention
 * longer than they are kept, a page that ends past the last log they count.
 */
export async function pageDays(
  db: DbTx,
  projectId: number,
  filters: LogFilters,
  limit: number,
  offset: number,
): Promise<{ from: Date; before: Date; skipped: number } | undefined> {
  if (!countedByRollups(filters) || filters.after) return undefined;
  const days = await queryRows<{ bucket: string | Date; n: number | string }>(
    db,
    sql`select c.bucket, sum(c.count) as n
          from ${logLevelCounts} c join ${projects} p on p.id = c.project_id
         where c.project_id = ${projectId} and c.grain = 'day' and p.retention_days <= ${ROLLUP_DAYS}
               ${filters.level ? sql`and c.level = ${filters.level}` : sql``}
         group by c.bucket
         order by c.bucket desc`,
  );
  let newer = 0;
  let first: { start: Date; newer: number } | undefined;
  for (const day of days) {
    const count = Number(day.n);
    if (count <= 0) continue;
    const start = new Date(day.bucket);
    if (!first && newer + count > offset) first = { start, newer };
    newer += count;
    if (first && newer >= offset + limit) return { from: start, before: new Date(first.start.getTime() + DAY_MS), skipped: first.newer };
  }
  return undefined;
}

/**
 * The size of the filtered list: exact when that is cheap, else the planner's estimate, marked
 * as such, so that a million-row project answers as fast as a small one.
 * - Far beyond EXACT_COUNT_LIMIT, the estimate is the answer.
 * - Otherwise a count that stops at EXACT_COUNT_LIMIT + 1. Without a search it reads only an
 *   index, so its cost is bounded; a search must read each candidate row, so it is counted only
 *   when the planner expects that to be cheap (EXACT_COUNT_MAX_COST).
 */
export async function countLogs(db: DbTx, condition: SQL | undefined, plan: Estimate, search = false) {
  if (plan.rows > 10 * EXACT_COUNT_LIMIT || (search && plan.cost > EXACT_COUNT_MAX_COST)) {
    return { total: plan.rows, estimated: true };
  }
  const exact = await cappedCount(db, condition);
  if (exact <= EXACT_COUNT_LIMIT) return { total: exact, estimated: false };
  return { total: Math.max(plan.rows, EXACT_COUNT_LIMIT + 1), estimated: true };
}

/** The logs matching `condition`, counted up to EXACT_COUNT_LIMIT + 1 (beyond, that is the answer). */
async function cappedCount(db: DbTx, condition: SQL | undefined): Promise<number> {
  const capped = db.select({ one: sql`1` }).from(logs).where(condition).limit(EXACT_COUNT_LIMIT + 1);
  const [row] = await queryRows<{ n: number }>(db, sql`select count(*)::int as n from (${capped}) as capped`);
  return Number(row?.n ?? 0);
}

const MINUTE_MS = 60_000;

/**
 * The size of a list bounded in time (a start within the minute rollups' keep) and filtered by
 * level at most: the minute rollups, which the log triggers keep exact, summed over the whole
 * minutes of its range, and the logs of its partial minutes counted (one at its start, one at its
 * end; a range open to the future has none at its end, the rollups holding its newest minute
 * whole). Exact, however many logs the range holds, when neither partial minute holds more than
 * EXACT_COUNT_LIMIT of its logs; else estimated, that minute counted for its share of the rollup's.
 * Counting the errors of the last hour read up to 10 001 of its logs (7 ms, 9 800 buffers, while
 * 2 000 logs a second arrived) and answered 10 001, estimated, for 90 000. Undefined for any
 * other list. `rollups`: a handle whose plans are kept (the rollups' statement is the same for
 * any range).
 */
export async function rangeCount(
  dbs: { db: DbTx; rollups: DbTx },
  projectId: number,
  filters: LogFilters,
): Promise<{ total: number; estimated: boolean } | undefined> {
  const { from, to, level } = filters;
  if (!from || filters.search || filters.patternId || filters.source) return undefined;
  if (from.getTime() < Date.now() - ROLLUP_KEEP_DAYS.minute * 86_400_000 + 3_600_000) return undefined;
  if (to && to.getTime() < from.getTime()) return { total: 0, estimated: false };
  // Whole minutes: from the first minute starting at or after `from` to the minute holding `to`.
  const firstWhole = Math.ceil(from.getTime() / MINUTE_MS) * MINUTE_MS;
  const lastPartial = to ? Math.floor(to.getTime() / MINUTE_MS) * MINUTE_MS : undefined;
  const [row] = await queryRows<{ whole: number | string | null; head: number | string | null; tail: number | string | null }>(
    dbs.rollups,
    sql`select sum(count) filter (where bucket >= ${new Date(firstWhole).toISOString()}::timestamptz
                                    and bucket < coalesce(${lastPartial === undefined ? null : new Date(lastPartial).toISOString()}::timestamptz, 'infinity')) as whole,
               sum(count) filter (where bucket < ${new Date(firstWhole).toISOString()}::timestamptz) as head,
               sum(count) filter (where bucket = ${lastPartial === undefined ? null : new Date(lastPartial).toISOString()}::timestamptz) as tail
          from ${logLevelCounts}
         where project_id = ${projectId} and grain = 'minute'
           and bucket >= ${new Date(firstWhole - MINUTE_MS).toISOString()}::timestamptz
           and (${level ?? null}::text is null or level = ${level ?? null}::text)`,
  );
  const whole = Number(row?.whole ?? 0);
  // A partial minute's logs in range: counted when its rollup holds any, up to EXACT_COUNT_LIMIT + 1.
  const part = async (minuteRows: number, bounds: Pick<LogFilters, 'from' | 'to' | 'before'>, share: number) => {
    if (minuteRows <= 0) return { n: 0, exact: true };
    const n = await cappedCount(dbs.db, where(projectId, { level, ...bounds }));
    return n <= EXACT_COUNT_LIMIT ? { n, exact: true } : { n: Math.max(n, Math.round(minuteRows * share)), exact: false };
  };
  const sameMinute = lastPartial !== undefined && lastPartial < firstWhole;
  const [head, tail] = await Promise.all([
    from.getTime() === firstWhole
      ? { n: 0, exact: true }
      : part(
          Number(row?.head ?? 0),
          sameMinute ? { from, to } : { from, before: new Date(firstWhole) },
          ((sameMinute ? to!.getTime() + 1 : firstWhole) - from.getTime()) / MINUTE_MS,
        ),
    lastPartial === undefined || sameMinute
      ? { n: 0, exact: true }
      : part(Number(row?.tail ?? 0), { from: new Date(lastPartial), to }, (to!.getTime() - lastPartial + 1) / MINUTE_MS),
  ]);
  return { total: whole + head.n + tail.n, estimated: !head.exact || !tail.exact };
}

export interface Estimate {
  /** Rows the planner expects to match. */
  rows: number;
  /** Its cost of reading them all, in its units. */
  cost: number;
}

/** The planner's estimate of the logs matching `condition`, from EXPLAIN: nothing is read. */
export async function estimate(db: DbTx, condition: SQL | undefined): Promise<Estimate> {
  type Plan = { Plan: { 'Plan Rows': number; 'Total Cost': number } }[];
  const result = await queryRows<{ 'QUERY PLAN': Plan | string }>(
    db,
    sql`explain (format json) ${db.select({ one: sql`1` }).from(logs).where(condition)}`,
  );
  const raw = result[0]?.['QUERY PLAN'];
  const plan = (typeof raw === 'string' ? (JSON.parse(raw) as Plan) : raw)?.[0]?.Plan;
  return { rows: Math.round(plan?.['Plan Rows'] ?? 0), cost: plan?.['Total Cost'] ?? 0 };
}

/**
 * How long the estimate of a list is kept (keptEstimate): a day of logs changes little in seconds,
 * and planning its estimate over a 4-million-log day took 1.5–2.5 ms, on every first page of a
 * search; the search's own estimate, 0.6–1 ms and a round trip more.
 */
export const KEPT_ESTIMATE_MS = 5_000;

/**
 * Values kept `ms` per database handle (one process may hold several: the tests, a second
 * instance's pool), by key; at most 1 000 a handle, the expired dropped first.
 */
export function keptPerHandle<V>(ms: number, { untilNewStatistics = false } = {}) {
  const byHandle = new WeakMap<DbTx, Map<string, { value: V; at: number; generation: number }>>();
  return {
    get(db: DbTx, key: string): V | undefined {
      const found = byHandle.get(db)?.get(key);
      if (untilNewStatistics && found?.generation !== statisticsGeneration) return undefined;
      return found && Date.now() - found.at < ms ? found.value : undefined;
    },
    /** Keeps `value`; answers its entry, for `forget`. */
    set(db: DbTx, key: string, value: V): { value: V; at: number; generation: number } {
      let kept = byHandle.get(db);
      if (!kept) byHandle.set(db, (kept = new Map()));
      const now = Date.now();
      if (kept.size >= 1_000 && !kept.has(key)) {
        for (const [k, v] of kept) if (now - v.at >= ms) kept.delete(k);
        if (kept.size >= 1_000) kept.clear();
      }
      const entry = { value, at: now, generation: statisticsGeneration };
      kept.set(key, entry);
      return entry;
    },
    /** Drops the entry `set` answered, unless a newer one took its place. */
    forget(db: DbTx, key: string, entry: { value: V; at: number; generation: number }): void {
      const kept = byHandle.get(db);
      if (kept?.get(key) === entry) kept.delete(key);
    },
  };
}

/**
 * Bumped when this process gathers new planner statistics (the statistics keeper, after a burst):
 * the estimates kept before were planned from the old ones, and a search right after a burst must
 * not be sized by them.
 */
let statisticsGeneration = 0;

/** Drops the planner's estimates kept so far (keptEstimate): the statistics they came from changed. */
export function forgetKeptEstimates(): void {
  statisticsGeneration++;
}

const keptEstimates = keptPerHandle<Promise<Estimate>>(KEPT_ESTIMATE_MS, { untilNewStatistics: true });

/**
 * The planner's estimate of `condition` (estimate), kept KEPT_ESTIMATE_MS under `key`, which must
 * name everything the condition depends on. For the lists whose keys repeat: a day of a project's
 * logs, and a search run again.
 */
export function keptEstimate(db: DbTx, key: string, condition: SQL | undefined): Promise<Estimate> {
  const found = keptEstimates.get(db, key);
  if (found) return found;
  const entry = keptEstimates.set(db, key, estimate(db, condition));
  // A failed estimate is not kept (unless a newer one took its place): the next request plans it again.
  entry.value.catch(() => keptEstimates.forget(db, key, entry));
  return entry.value;
}

/**
 * How long the share of a search's matches, as its last search found it, is kept (learnedShare):
 * as long as the pools keep an idle connection (10 minutes). Someone reading logs searches the same
 * text again after a pause of minutes, and with a share kept a minute the search after such a pause
 * probed as a first search does: for a word in 1 628 of 3.4 million logs, a slice, the older logs
 * fetched and counted, the slice's rollup read and two estimates (165–220 ms through the API), where
 * the share kept runs one statement. What changes a share is the list's growth, which
 * LEARNED_GROWTH bounds whatever the time.
 */
export const LEARNED_SHARE_MS = 600_000;

/** Shares learned, per database handle, by the key of their search, with the size of the list then. */
const learnedShares = keptPerHandle<{ share: number; listRows: number }>(LEARNED_SHARE_MS);

/**
 * How much a list may have grown since its share was learned for that share still to be taken: a
 * fiftieth of it, or 1 000 logs. Steady ingest adds about a hundredth a minute to a busy project;
 * a burst adds more, and the new logs may hold the text far more often (an incident's error),
 * where a share learned before would send the search to fetch every match.
 */
const LEARNED_GROWTH = { share: 0.02, rows: 1_000 };

/**
 * The share of a search's matches in its list, as the last search of the same text and filters
 * found it within LEARNED_SHARE_MS (learnShare), or undefined; undefined too when the list, now
 * `listRows` long, has grown by more than LEARNED_GROWTH since. The planner prices any word missing
 * from its sample at the same floor, a rare token as an uncommon word, and a word it met once in
 * its sample at 1 % or more; what a search counted tells them apart, and a search run again (a
 * refresh, the next page, a dashboard) reads as the share says: the slice that fills its page, or
 * every match of a rare word, without a probe first. A share that changed since costs time, never
 * results: every path answers the same page.
 */
export function learnedShare(db: DbTx, key: string, listRows: number): number | undefined {
  const learned = learnedShares.get(db, key);
  if (!learned) return undefined;
  return listRows - learned.listRows <= Math.max(LEARNED_GROWTH.rows, LEARNED_GROWTH.share * learned.listRows) ? learned.share : undefined;
}

/** Keeps the share of matches a search found in a list of `listRows` (learnedShare), under the key of its text and filters. */
export function learnShare(db: DbTx, key: string, share: number, listRows: number): void {
  learnedShares.set(db, key, { share, listRows });
}

/**
 * How a search of a project of `projectRows` logs reads its trigram keys: checked on the rows
 * the index finds when the project is wide (isWideProject), within the days it has logs in (by
 * the daily rollups, where they cover its retention), so that other projects' days are not read.
 * `known`: those days as rollupSummary read them beside the list's count; else they are read here.
 */
export async function searchScope(
  db: DbTx,
  projectId: number,
  projectRows: number,
  known?: RollupDays | null,
): Promise<Pick<LogFilters, 'wideProject' | 'days'>> {
  if (!(await isWideProject(db, projectRows))) return { wideProject: false };
  const days = known === undefined ? (await rollupSummary(db, projectId, undefined, true)).days : known;
  if (!days) return { wideProject: true };
  // Up to the end of tomorrow at least: a log stored after this read, on a day the rollups did not
  // show yet (today's first, past midnight), is still found by the search that follows.
  const tomorrowEnd = (Math.floor(Date.now() / 86_400_000) + 2) * 86_400_000;
  return { wideProject: true, days: { from: days.first, to: new Date(Math.max(days.last.getTime() + 86_400_000, tomorrowEnd)) } };
}

/**
 * The share of all logs beyond which a project's search checks the project on the rows found
 * (within its days: searchScope) rather than and-ing the trigram index with the project's b-tree.
 * The b-tree marks every log of the project (0.07 µs each), the trigram index alone checks every
 * match of the word in the project's days, other projects' included (2.3 µs each): for a word in
 * 0.1 % of the logs they cost the same at a project of about 3 % of them. A project of 250 000
 * logs among 6.6 million (3.8 %) took 20–21 ms for an uncommon or a rare word with the b-tree.
 * (Measured with the trigram index of the message; the project's own keys, migration 0017, hold
 * no other project's matches, so that and-ing the b-tree gains little at any share: a smaller
 * project still leaves it to the planner, which and-ed it on 8 of 29 days for a project of 244 000
 * logs among 13 million, 5.2 ms p50 for a rare word through the API.)
 */
const WIDE_PROJECT_SHARE = 0.02;

/**
 * All logs of every project, by the partitions' statistics, as last read (kept a minute), per
 * database handle: one process may hold several (the tests, a second instance's pool).
 */
const allLogsOf = new WeakMap<DbTx, { rows: number; readAt: number }>();

/**
 * Whether a project of `projectRows` logs holds a large share of all logs (WIDE_PROJECT_SHARE), by
 * the partitions' statistics (ANALYZE's counts, read at most once a minute): its searches then
 * find their matches through the keys alone (LogFilters.wideProject).
 */
export async function isWideProject(db: DbTx, projectRows: number): Promise<boolean> {
  let allLogs = allLogsOf.get(db);
  if (!allLogs || Date.now() - allLogs.readAt > 60_000) {
    const [row] = await queryRows<{ n: number | string | null }>(
      db,
      sql`select sum(greatest(c.reltuples, 0)) as n from pg_inherits i join pg_class c on c.oid = i.inhrelid
           where i.inhparent = 'logs'::regclass`,
    );
    allLogs = { rows: Number(row?.n ?? 0), readAt: Date.now() };
    allLogsOf.set(db, allLogs);
  }
  // Without statistics yet (a new database), any project with logs is the wide one.
  return projectRows > 0 && projectRows >= WIDE_PROJECT_SHARE * allLogs.rows;
}
