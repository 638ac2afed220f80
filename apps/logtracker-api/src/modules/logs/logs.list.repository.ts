import { and, gte, lt, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { logs, newestFirst } from '../../db/schema/index.js';
import { countLogs, estimate, pageDays, rangeCount, rollupCount } from './logs.counts.repository.js';
import { listed, microseconds, where, type ListedLog, type LogFilters } from './logs.filters.repository.js';
import { rowsByKey } from './logs.indexed.repository.js';
import { searchLogs } from './logs.search.repository.js';

/**
 * A page of a project's logs, newest first, and the size of the whole filtered list (exact, or
 * estimated and marked as such). A search goes to its own strategy (logs.search.repository.ts).
 */
export async function listLogs(dbs: { db: DbTx; plannedOnce: DbTx }, projectId: number, filters: LogFilters, limit: number, offset: number) {
  const { db } = dbs;
  // Counts ignore the cursor: they are the size of the whole filtered list.
  const counted = where(projectId, { ...filters, after: undefined });
  if (!filters.search) {
    const [rows, total] = await Promise.all([
      // Without time bounds the plan is the same for any project and level: kept, not made anew.
      newestPage({ page: filters.from || filters.to ? db : dbs.plannedOnce, rows: db }, projectId, filters, limit, offset),
      rollupCount(dbs.plannedOnce, projectId, filters).then(async (exact) => {
        if (exact !== undefined) return { total: exact, estimated: false };
        const ranged = await rangeCount({ db, rollups: dbs.plannedOnce }, projectId, filters);
        return ranged ?? countLogs(db, counted, await estimate(db, counted));
      }),
    ]);
    return { rows, ...total };
  }
  return searchLogs(db, projectId, { ...filters, search: filters.search }, limit, offset);
}

/**
 * The condition of a page of a list without a search. A list bounded in time hides its bounds from
 * the planner (LogFilters.boundsHidden): the newest minutes of a partition logs keep arriving in are
 * newer than its statistics, which the planner read as holding no log, so it fetched every log of
 * the range and sorted them for the page. A dashboard's errors of the last hour, while 2 000 logs a
 * second arrived, read 58 000 rows for 50 (220 ms, and more each minute until the next ANALYZE);
 * hidden, the range has the planner's default share of the day, and the page is read from the
 * (project, level, time) index in order, 50 rows whatever the range holds (2 ms).
 */
export function listCondition(projectId: number, filters: LogFilters): SQL | undefined {
  return where(projectId, filters.from || filters.to ? { ...filters, boundsHidden: true } : filters);
}

/** Beyond this offset a page skips the logs before it by their keys alone. */
const KEYS_FIRST_OFFSET = 500;

/**
 * A page of the newest logs. Deep in the list (a page by number up to the 10 000th log), the
 * skipped logs are read as their keys from the index, and only the page's rows whole: skipping
 * 10 000 logs whole fetched each from the heap. The rows by their keys are planned for their
 * values (`dbs.rows`): their times then leave the other days' partitions unplanned, where a generic
 * plan, which cannot prune by an array it does not know, probed every day's primary key for every
 * key (50 keys over 40 partitions: 0.95 ms, against 0.24 planned and run for their values).
 * Where the daily rollups tell which days the page lies in (pageDays), the keys are read from those
 * days alone, the newer days' logs skipped by their count.
 */
async function newestPage(dbs: { page: DbTx; rows: DbTx }, projectId: number, filters: LogFilters, limit: number, offset: number): Promise<ListedLog[]> {
  const db = dbs.page;
  const condition = listCondition(projectId, filters);
  if (offset < KEYS_FIRST_OFFSET) {
    return db.select(listed).from(logs).where(condition).orderBy(...newestFirst).limit(limit).offset(offset);
  }
  // Only for a list unbounded in time, whose reads keep their plans (`dbs.page`): the rollups' too.
  const days = await pageDays(db, projectId, filters, limit, offset);
  // The days' bounds as parameters: the plan is the list's own (its indexes read in order), and the
  // other days' partitions are pruned as it runs.
  const within = days ? and(condition, gte(logs.timestamp, days.from), lt(logs.timestamp, days.before)) : condition;
  const page = db
    .select({ timestamp: logs.timestamp, id: logs.id })
    .from(logs)
    .where(within)
    .orderBy(...newestFirst)
    .limit(limit)
    .offset(days ? offset - days.skipped : offset)
    .as('page');
  const keys = await db.select({ cursorTime: microseconds(page.timestamp), id: page.id }).from(page);
  return rowsByKey(dbs.rows, projectId, keys);
}
