import { withGenericPlan } from '@repo/db';
import type { DbTx } from '../../db/index.js';
import { countLogs, EXACT_COUNT_LIMIT, keptEstimate, learnedShare, learnShare, rollupSummary, searchScope, type Estimate } from './logs.counts.repository.js';
import { plannedGenerically, where, type ListedLog, type LogFilters } from './logs.filters.repository.js';
import { indexedPage, isKnownShare, slicedPage, worthSlicing } from './logs.indexed.repository.js';
import { SEARCH_WALK_MIN_SHARE, SEARCH_WALK_ROWS, streamedPage, walkedPage, walkRowsFor, type NewestRead } from './logs.walk.repository.js';

/**
 * A search, by the cheaper of two plans for the share of logs that match:
 * - a common text: read the newest logs in index order (only the other filters narrow them) and
 *   keep the matches; a page fills within a few hundred rows, whatever the size of the project;
 * - a rare text: the trigram index finds every match, the newest are kept, and their number is
 *   the exact count, for free.
 * A first or cursor page takes the share from the planner's estimate over the day of logs before
 * it (a few partitions to plan, where an estimate over every daily partition cost as much as the
 * search), reads the newest logs no further than the page needs, and sizes the total by where it
 * stopped. A page by offset is sized by the planner's estimate over the whole list. Either can
 * be far off (a text common in other projects and absent from this one, common long ago and rare
 * lately), so a read is bounded, and a text that proves rare goes to the index after all.
 */
export async function searchLogs(db: DbTx, projectId: number, filters: LogFilters & { search: string }, limit: number, offset: number) {
  // A read of the newest logs of a list unbounded in time keeps one plan per connection (its plan
  // is the same for any project, level and text): planned for its values, over every daily
  // partition, it took 5–6 ms of planning for 1–2 ms of reading. It stays on these connections,
  // with the other searches: a cold project's reads, seconds each, then hold these and not the
  // main pool's, which answers sign-ins and stores logs.
  const walk = <T>(read: (tx: DbTx) => Promise<T>): Promise<T> => (plannedGenerically(filters) ? withGenericPlan(db, read) : read(db));
  const others = { ...filters, search: undefined };
  const counted = where(projectId, { ...filters, after: undefined });
  const newest = where(projectId, others);
  // The planner's estimates are kept a few seconds (keptEstimate): a search run again (a refresh,
  // the next page, a dashboard) plans none of them anew.
  let planned: Promise<Estimate> | undefined;
  const plan = () => (planned ??= keptEstimate(db, estimateKey(projectId, filters, filters), counted));
  // The size of the list without the search: exact from the rollups where they can tell.
  // The project's days come with it (a round trip fewer), for the searches that read the index.
  const summary = rollupSummary(db, projectId, others, true);
  const unsearched = summary.then(async ({ count: exact }) =>
    exact === undefined
      ? { ...(await keptEstimate(db, estimateKey(projectId, others, filters), where(projectId, { ...others, after: undefined }))), exact: false }
      : { rows: exact, cost: 0, exact: true },
  );
  // With the newest hour the project has logs in, the end of a range open to the future (searchHours).
  const scope = async () => ({ ...(await searchScope(db, projectId, (await unsearched).rows, (await summary).days)), latest: (await summary).latest });
  // Awaited only on the paths that need it; a failure must not go unhandled on the others.
  unsearched.catch(() => undefined);
  const rowsFor = (s: number) => walkRowsFor(offset + limit, s);
  // The share of matches a search found is kept for the next search of the same text and filters
  // (learnedShare), a list bounded in time apart from the whole list (searchShareKey).
  const shareKey = searchShareKey(projectId, filters);
  const learn = <T extends { total: number }>(page: T, listRows: number): T => {
    learnShare(db, shareKey, page.total / Math.max(1, listRows), listRows);
    return page;
  };

  /**
   * A full page from a read of the newest logs, where `share` of them matched; `gate` is the
   * estimate that decides whether the list is counted exactly (countLogs).
   */
  async function answer(rows: ListedLog[], share: number, gate: () => Promise<Estimate> = plan) {
    const implied = Math.round(share * (await unsearched).rows);
    const total =
      offset === 0 && implied >= 2 * EXACT_COUNT_LIMIT
        ? // Far beyond what is counted exactly: the share seen is the estimate.
          { total: implied, estimated: true }
        : await countLogs(db, counted, await gate(), true);
    // An estimate below what the page itself shows would be a last page before the last.
    return { rows, ...total, total: Math.max(total.total, offset + limit) };
  }

  /** The share of matches among the newest logs a read of them in order found, when it came short of a page. */
  let seenNewest: number | undefined;
  /**
   * Reads the newest logs for a page when `share` says it fills within SEARCH_WALK_ROWS.max of
   * them, and once more, longer, sized by the share seen when the first read comes short but
   * found matches. Answers the page, or undefined for the index to find it.
   */
  async function readNewest(share: number, read: (walkRows: number) => Promise<NewestRead>, gate?: () => Promise<Estimate>) {
    if (share < SEARCH_WALK_MIN_SHARE) return undefined;
    const walkRows = Math.min(SEARCH_WALK_ROWS.max, rowsFor(share));
    const first = await read(walkRows);
    if (first.rows.length === limit) return answer(first.rows, first.share, gate);
    seenNewest = first.share;
    if (first.share > 0 && walkRows < SEARCH_WALK_ROWS.max && rowsFor(first.share) <= SEARCH_WALK_ROWS.max) {
      const longer = await read(rowsFor(first.share));
      if (longer.rows.length === limit) return answer(longer.rows, longer.share, gate);
      seenNewest = longer.share;
    }
    return undefined;
  }

  if (offset === 0) {
    // The share of matches among the logs of the day before the page, as the planner sees it:
    // that day's partitions only, so that it plans in a fraction of a millisecond.
    const day = recentDay(filters);
    // A list bounded within that day (the last hour's logs, say) is its own day: the estimates of
    // the whole list serve, rather than planning the same statements twice.
    const ownDay = !filters.after && day.from.getTime() === filters.from?.getTime() && day.to?.getTime() === filters.to?.getTime();
    const [all, recent, recentMatching] = await Promise.all([
      unsearched,
      ownDay ? unsearched : keptEstimate(db, estimateKey(projectId, others, day), where(projectId, { ...others, ...day, after: undefined })),
      ownDay ? plan() : keptEstimate(db, estimateKey(projectId, filters, day), where(projectId, { ...filters, ...day, after: undefined })),
    ]);
    if (all.exact && !filters.after && all.rows <= SEARCH_WALK_ROWS.min) {
      // A list this short is read whole: its matches are the page, and their number the total.
      const whole = await walk((tx) => walkedPage(tx, newest, filters.search, SEARCH_WALK_ROWS.min, limit, 0));
      return { rows: whole.rows, total: whole.matched, estimated: false };
    }
    // Whether to count exactly, judged without planning over every partition: the day's estimate
    // scaled to the whole list (a bounded list plans over its own few partitions anyway).
    const gate = async (): Promise<Estimate> => {
      if (filters.from || filters.to) return plan();
      const scale = all.rows / Math.max(1, recent.rows);
      return { rows: Math.round(recentMatching.rows * scale), cost: recentMatching.cost * scale };
    };
    // The newest logs, read no further than the page needs, by the share of matches its last
    // search found where there is one (pageShare).
    const { share, known } = pageShare(recentMatching.rows / Math.max(1, recent.rows), learnedShare(db, shareKey, all.rows));
    const found = await readNewest(share, (walkRows) => walk((tx) => streamedPage(tx, newest, filters.search, walkRows, limit)), gate);
    if (found) return found;
    // Too rare for the walk: the newest slice of time that should fill the page, sized by the
    // share the walk found among the newest logs where it ran.
    const sliced = worthSlicing(limit, share, all.rows, known)
      ? await slicedPage(db, projectId, filters, limit, share, { listRows: all.rows, scope: await scope(), known, newest: seenNewest })
      : undefined;
    if (sliced) return learn(sliced, all.rows);
  } else {
    const [p, all] = await Promise.all([plan(), unsearched]);
    const found = await readNewest(p.rows / Math.max(1, all.rows), (walkRows) =>
      walk((tx) => walkedPage(tx, newest, filters.search, walkRows, limit, offset)),
    );
    if (found) return found;
  }
  const { rows, matched } = await indexedPage(db, projectId, { ...filters, ...(await scope()) }, limit, offset);
  if (matched !== undefined) {
    const page = { rows, total: matched, estimated: false };
    return offset === 0 ? learn(page, (await unsearched).rows) : page;
  }
  // The page is empty, so it carries no count: the cursor or the offset is past the last match.
  return { rows, ...(await countLogs(db, counted, await plan(), true)) };
}

/**
 * The share of matches a first or cursor page of a search plans by, and whether it says anything
 * of the text (isKnownShare): the share its last search found (learnedShare, searchShareKey)
 * where there is one, else the planner's over the day before the page. The planner's comes from
 * the 100 messages of its histogram: a text in none of them is priced at its floor (0.01 %), one
 * it met by chance in one at 1 % or more, where the text may be ten times rarer. A walk sized by
 * that 1 %, then the slices and the read of the older logs it vouched for, took 45 ms for a word in
 * 0.09 % of 3.5 million logs, searched again every time: what the last search counted says
 * better.
 */
export function pageShare(planned: number, learned: number | undefined): { share: number; known: boolean } {
  return learned === undefined ? { share: planned, known: isKnownShare(planned) } : { share: learned, known: true };
}

/**
 * The key a search's share of matches is learned under (learnedShare): its project, text and
 * filters, and whether the list is bounded in time, whatever its bounds (the last hour's move with
 * every request). A bounded list neither takes nor overwrites the whole list's share, measured over
 * a list of another length. Before bounded lists learned theirs, the last hour's search of a word
 * the planner overprices (pageShare) read its newest 20 000 logs in order before the index every
 * time (p50 27.2 ms at 2 000 000 logs in one full run of the bench, 7.5 and 10.5 ms at the sizes on
 * either side); now only its first search does.
 */
export function searchShareKey(projectId: number, filters: LogFilters & { search: string }): string {
  return JSON.stringify([projectId, filters.search, filters.level, filters.source, filters.patternId, Boolean(filters.from || filters.to)]);
}

/**
 * The day of logs just before a first or cursor page: before the cursor or `to`, within `from`,
 * else the last 24 hours.
 */
function recentDay(filters: LogFilters): { from: Date; to?: Date } {
  const bounds = [filters.to?.getTime(), filters.after ? Date.parse(filters.after.timestamp) : undefined].filter(
    (t): t is number => t !== undefined,
  );
  const end = bounds.length > 0 ? Math.min(...bounds) : undefined;
  const start = Math.max((end ?? Date.now()) - 86_400_000, filters.from?.getTime() ?? -Infinity);
  return { from: new Date(start), ...(end === undefined ? {} : { to: new Date(end) }) };
}

/**
 * The key of the estimate of a list within these bounds (keptEstimate): the project, the filters
 * the condition holds (the search among them, when it has one), and the bounds to the minute.
 */
function estimateKey(projectId: number, filters: LogFilters, bounds: { from?: Date; to?: Date }): string {
  const minute = (d?: Date) => (d ? Math.floor(d.getTime() / 60_000) : null);
  return JSON.stringify([
    projectId,
    filters.search ?? null,
    filters.level,
    filters.source,
    filters.patternId,
    filters.before?.getTime(),
    minute(bounds.from),
    minute(bounds.to),
  ]);
}
