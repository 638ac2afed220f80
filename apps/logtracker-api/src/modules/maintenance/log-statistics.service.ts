import type { DbTx } from '../../db/index.js';
import * as repo from './maintenance.repository.js';

/** A partition is analysed again once it has grown by half since its last statistics… */
export const ANALYZE_GROWTH = 0.5;
/** …and by at least this many rows. */
export const ANALYZE_MIN_ROWS = 5_000;
/** At most this many partitions per pass (a burst lands in today's, sometimes yesterday's too). */
const PARTITIONS_PER_PASS = 3;

/**
 * Keeps the planner's statistics of the logs partitions close behind ingest. PostgreSQL's own
 * autovacuum analyses a table once a tenth of it changed, but looks only once a minute: right after
 * a burst — an incident, when people search — the plan of a search still assumes the partition
 * before the burst (a new project it has never seen holding a handful of rows), and a search that
 * takes 15 ms after ANALYZE takes 250 ms. This analyses the partitions ingest grew by half, soon
 * after it happened, so statistics trail a burst by a second or two, at the cost of a few analyses
 * of a partition per doubling of it.
 */
export function createLogStatisticsService(deps: { db: DbTx }) {
  return {
    /** Analyses the partitions that grew enough since their last statistics; answers their names. */
    async refresh(): Promise<string[]> {
      const stale = await repo.staleLogPartitions(deps.db, ANALYZE_MIN_ROWS, ANALYZE_GROWTH, PARTITIONS_PER_PASS);
      return repo.analyzePartitions(deps.db, stale);
    },
  };
}

export type LogStatisticsService = ReturnType<typeof createLogStatisticsService>;
