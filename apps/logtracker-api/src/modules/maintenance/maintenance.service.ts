import type { DbTx } from '../../db/index.js';
import { ROLLUP_KEEP_DAYS, type RollupGrain } from '../../db/schema/index.js';
import * as repo from './maintenance.repository.js';

const DAY_MS = 86_400_000;

export interface MaintenanceResult {
  partitionsCreated: number;
  rollupRowsCompacted: number;
  /** Set when another instance was running maintenance: this pass did nothing. */
  skipped?: true;
}

/** The part of a pino/Fastify logger a maintenance pass writes to. */
interface MaintenanceLogger {
  info(obj: object, msg?: string): void;
}

/**
 * Upkeep of the log storage:
 * - daily partitions exist a week ahead, so new logs never land in the default partition;
 * - rollup rows, appended per insert statement, are merged per bucket and key, and rows older
 *   than any statistics range are removed, so statistics read small, bounded tables.
 */
export function createMaintenanceService(deps: { db: DbTx; logger: MaintenanceLogger; now?: () => Date }) {
  const { db, logger } = deps;
  const now = deps.now ?? (() => new Date());

  /** Creates the daily partitions missing around today; answers how many. */
  function ensurePartitions(): Promise<number> {
    return repo.ensureDailyPartitions(db, now());
  }

  /**
   * Merges the rollup rows appended since the last merge (found through their partial index);
   * answers how many rows fewer the rollups hold. What ingest leaves: the job runs it after ingest
   * too (jobs/log-statistics.ts).
   */
  async function mergeFreshRollups() {
    let compacted = 0;
    // Buckets closed for a minute are final except for backfills, which simply append again.
    const closed = new Date(now().getTime() - 60_000);
    for (const rollup of repo.ROLLUP_TABLES) compacted += await repo.mergeFreshRollups(db, rollup, closed);
    return compacted;
  }

  /**
   * Deletes the rollup rows older than any statistics range reads (each grain's, project by
   * project through the rollups' index): on the scheduled pass only.
   */
  async function deleteExpiredRollups() {
    for (const rollup of repo.ROLLUP_TABLES) {
      for (const [grain, keepDays] of Object.entries(ROLLUP_KEEP_DAYS) as [RollupGrain, number][]) {
        await repo.deleteRollupsBefore(db, rollup, grain, new Date(now().getTime() - keepDays * DAY_MS));
      }
    }
  }

  return {
    ensurePartitions,
    mergeFreshRollups,
    /**
     * One pass: partitions ahead, the ranges of ids each partition holds read anew (looking a log
     * up by id), then the expired rollup rows deleted and the fresh ones merged.
     */
    async run(): Promise<MaintenanceResult> {
      const partitionsCreated = await ensurePartitions();
      await repo.refreshLogPartitionIds(db);
      await deleteExpiredRollups();
      const rollupRowsCompacted = await mergeFreshRollups();
      const result = { partitionsCreated, rollupRowsCompacted };
      if (partitionsCreated > 0) logger.info(result, 'log storage maintenance');
      return result;
    },
  };
}

export type MaintenanceService = ReturnType<typeof createMaintenanceService>;
