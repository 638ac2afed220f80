import type { DbTx } from '../../db/index.js';
import * as repo from './maintenance.repository.js';

/**
 * A partition is analysed again once a tenth of it is new since its last statistics (the share at
 * which autovacuum would, within a second instead of a minute)…
 */
export const ANALYZE_GROWTH = 0.1;
/** …and by at least this many rows. */
export const ANALYZE_MIN_ROWS = 5_000;
/**
 * …but not within this long of its last analysis. An analysis reads a sample of up to 30 000 pages
 * (80-240 ms of the database's time), and a partition still small, as each day's is at first,
 * grows by a tenth with every second of sustained ingest: analysed at each, it took a sixth of the
 * database's time that ingest had (the bench's batch ingest, 92 % of the bare endpoint's rate, 106 %
 * with no analysis). Spaced, it takes a few percent, and statistics still trail a burst by seconds.
 */
export const ANALYZE_SPACING_MS = 5_000;
/**
 * The search keys common in a project (log_search_common_keys, migration 0020): held by this share
 * of its logs of the last day or more…
 */
export const SEARCH_COMMON_KEY_SHARE = 0.02;
/**
 * …counted on a sample of about this many logs of the last day (every project's; 0.2 s of the
 * database's time for 10 000), where a project has at least SEARCH_COMMON_KEY_MIN_LOGS of them:
 * a project with fewer has short posting lists, and all of its keys serve its searches.
 */
export const SEARCH_COMMON_KEY_SAMPLE = 10_000;
export const SEARCH_COMMON_KEY_MIN_LOGS = 200;
/** When a partition could not be analysed for a lock another held: the next try. */
const HELD_RETRY_MS = 2_000;
/** At most this many partitions per pass (a burst lands in today's, sometimes yesterday's too). */
const PARTITIONS_PER_PASS = 3;

/** What a pass did: the partitions analysed, and when the next one is due if some had to wait. */
export interface StatisticsPass {
  analysed: string[];
  /** Milliseconds until the soonest partition left waiting for the spacing may be analysed. */
  nextDueInMs?: number;
}

/**
 * Keeps the planner's statistics of the logs partitions close behind ingest. PostgreSQL's own
 * autovacuum analyses a table once a tenth of it changed, but looks only once a minute: right after
 * a burst — an incident, when people search — the plan of a search still assumes the partition
 * before the burst (a new project it has never seen holding a handful of rows), and a search that
 * takes 15 ms after ANALYZE takes 250 ms. This analyses the partitions ingest grew by a tenth, soon
 * after it happened, so statistics trail a burst by a second or two. Growth by half was too coarse:
 * in the full bench, today's partition, already grown by the earlier phases' ingest, took a burst of
 * 300 000 logs of a new project without a new analysis, and searches of it took 250–320 ms. A tenth
 * was too coarse too, once the day held 3.5 million logs (100–270 ms a search after the same burst):
 * a partition is also analysed once a project stored more logs there than its statistics give it
 * (staleLogPartitions), which a steady project does not, and a new one does with its first
 * ANALYZE_MIN_ROWS. An analysis reads a sample of 30 000 rows (a few hundred milliseconds at most),
 * at most once every ANALYZE_SPACING_MS a partition. The same pass merges the partition's trigram pending list (maintenance.repository.ts,
 * analyzePartitions).
 */
export function createLogStatisticsService(deps: { db: DbTx; spacingMs?: number; minRows?: number }) {
  const spacingMs = deps.spacingMs ?? ANALYZE_SPACING_MS;
  const minRows = deps.minRows ?? ANALYZE_MIN_ROWS;
  return {
    /**
     * Analyses the partitions that grew enough since their last statistics, or where a project of
     * `stored` (logs stored per project since the last analysis) outgrew what they say of it, and
     * were not analysed within the spacing; tells when those left waiting are due.
     */
    async refresh(stored?: ReadonlyMap<number, number>): Promise<StatisticsPass> {
      const stale = await repo.staleLogPartitions(deps.db, minRows, ANALYZE_GROWTH, spacingMs, PARTITIONS_PER_PASS, stored);
      const due = stale.filter((p) => p.dueInMs === 0).map((p) => p.name);
      const waits = stale.filter((p) => p.dueInMs > 0).map((p) => p.dueInMs);
      const analysed = await repo.analyzePartitions(deps.db, due);
      // One held by autovacuum or by another instance's pass is tried again shortly.
      if (analysed.length < due.length) waits.push(HELD_RETRY_MS);
      return waits.length > 0 ? { analysed, nextDueInMs: Math.min(...waits) } : { analysed };
    },
    /**
     * Finds again the search keys common in each project's logs of the last day (see
     * SEARCH_COMMON_KEY_SHARE); answers how many there are.
     */
    refreshCommonKeys(now = new Date()): Promise<number> {
      return repo.refreshCommonSearchKeys(deps.db, new Date(now.getTime() - 86_400_000), SEARCH_COMMON_KEY_SAMPLE, SEARCH_COMMON_KEY_SHARE, SEARCH_COMMON_KEY_MIN_LOGS);
    },
    /**
     * Merges what ingest left in the trigram indexes' pending lists (mergeSearchPending), once it
     * pauses and now and then while it goes on; answers the pages merged.
     */
    mergePending(): Promise<number> {
      return repo.mergeSearchPending(deps.db);
    },
  };
}

export type LogStatisticsService = ReturnType<typeof createLogStatisticsService>;
