import type { DbTx } from '../../db/index.js';
import * as repo from './maintenance.repository.js';

/**
 * A partition is analysed again once a tenth of it is new since its last statistics (the share at
 * which autovacuum would, within a second instead of a minute)…
 */
export const ANALYZE_GROWTH = 0.1;
/** …and by at least this many rows. */
export const ANALYZE_MIN_ROWS = 5_000;
/** At most this many partitions per pass (a burst lands in today's, sometimes yesterday's too). */
const PARTITIONS_PER_PASS = 3;

/**
 * Keeps the planner's statistics of the logs partitions close behind ingest. PostgreSQL's own
 * autovacuum analyses a table once a tenth of it changed, but looks only once a minute: right after
 * a burst — an incident, when people search — the plan of a search still assumes the partition
 * before the burst (a new project it has never seen holding a handful of rows), and a search that
 * takes 15 ms after ANALYZE takes 250 ms. This analyses the partitions ingest grew by a tenth, soon
 * after it happened, so statistics trail a burst by a second or two. Growth by half was too coarse:
 * in the full bench, today's partition, already grown by the earlier phases' ingest, took a burst of
 * 300 000 logs of a new project without a new analysis, and searches of it took 250–320 ms. An analysis reads a
 * sample of 30 000 rows (a few hundred milliseconds at most), at most once a second. The same pass
 * merges the partition's trigram pending list (maintenance.repository.ts, analyzePartitions).
 */
export function createLogStatisticsService(deps: { db: DbTx }) {
  return {
    /** Analyses the partitions that grew enough since their last statistics; answers their names. */
    async refresh(): Promise<string[]> {
      const stale = await repo.staleLogPartitions(deps.db, ANALYZE_MIN_ROWS, ANALYZE_GROWTH, PARTITIONS_PER_PASS);
      return repo.analyzePartitions(deps.db, stale);
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
