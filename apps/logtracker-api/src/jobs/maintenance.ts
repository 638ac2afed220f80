import { queryRows, timestamptz } from '@repo/db';
import { sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import type { DbTx } from '../db/index.js';
import { ROLLUP_KEEP_DAYS } from '../db/schema/index.js';
import type { JobLogger } from './retention.js';

const DAY_MS = 86_400_000;

export interface MaintenanceResult {
  partitionsCreated: number;
  rollupRowsCompacted: number;
}

/**
 * Upkeep of the log storage:
 * - daily partitions exist a week ahead, so new logs never land in the default partition;
 * - rollup rows, appended per insert statement, are merged per bucket and key, and rows older
 *   than any statistics range are removed, so statistics read small, bounded tables.
 */
export function createMaintenanceJob(deps: { db: DbTx; logger: JobLogger; now?: () => Date }) {
  const { db, logger } = deps;
  const now = deps.now ?? (() => new Date());
  let running: Promise<MaintenanceResult> | undefined;

  async function ensurePartitions() {
    const [row] = await queryRows<{ created: number }>(
      db,
      sql`select logs_ensure_partitions((${timestamptz(now())} at time zone 'UTC')::date - 1,
                                        (${timestamptz(now())} at time zone 'UTC')::date + 7) as created`,
    );
    return Number(row?.created ?? 0);
  }

  async function compactRollups() {
    let compacted = 0;
    const closed = timestamptz(new Date(now().getTime() - 60_000));
    for (const [rollup, key] of [
      ['log_level_counts', 'level'],
      ['log_source_counts', 'source'],
    ] as const) {
      const table = sql.raw(rollup);
      const column = sql.raw(key);
      for (const [grain, keepDays] of Object.entries(ROLLUP_KEEP_DAYS)) {
        await db.execute(sql`delete from ${table} where grain = ${grain} and bucket < ${timestamptz(new Date(now().getTime() - keepDays * DAY_MS))}`);
      }
      // Only buckets with rows appended since the last pass (the partial index finds them) are
      // merged, into one row per key. Buckets closed for a minute are final except for
      // backfills, which simply append again.
      const [row] = await queryRows<{ n: number }>(
        db,
        sql`with fresh as (
              select distinct project_id, grain, bucket from ${table} where not compacted and bucket < ${closed}
            ), moved as (
              delete from ${table} as r using fresh as f
               where r.project_id = f.project_id and r.grain = f.grain and r.bucket = f.bucket
              returning r.project_id, r.grain, r.bucket, r.${column}, r.count
            ), merged as (
              insert into ${table} (project_id, grain, bucket, ${column}, count, compacted)
              select project_id, grain, bucket, ${column}, sum(count)::int, true from moved
               group by 1, 2, 3, 4 having sum(count) <> 0
              returning 1
            )
            select (select count(*) from moved)::int - (select count(*) from merged)::int as n`,
      );
      compacted += Number(row?.n ?? 0);
    }
    return compacted;
  }

  async function run(): Promise<MaintenanceResult> {
    const partitionsCreated = await ensurePartitions();
    const rollupRowsCompacted = await compactRollups();
    const result = { partitionsCreated, rollupRowsCompacted };
    if (partitionsCreated > 0) logger.info(result, 'log storage maintenance');
    return result;
  }

  return {
    ensurePartitions,
    /** One pass; a pass asked for while one runs joins it. */
    runOnce(): Promise<MaintenanceResult> {
      running ??= run().finally(() => {
        running = undefined;
      });
      return running;
    },
  };
}

export type MaintenanceJob = ReturnType<typeof createMaintenanceJob>;

/** Runs maintenance when the app is ready and then every `intervalSeconds` (0: never). */
export function registerMaintenance(app: FastifyInstance, deps: { config: Readonly<Config>; db: DbTx }) {
  const job = createMaintenanceJob({ db: deps.db, logger: app.log });
  const intervalMs = deps.config.maintenanceIntervalSeconds * 1000;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const tick = () => {
    job
      .runOnce()
      .catch((error: unknown) => app.log.error({ err: error }, 'log storage maintenance failed'))
      .finally(() => {
        if (!stopped) {
          timer = setTimeout(tick, intervalMs);
          timer.unref();
        }
      });
  };
  if (intervalMs > 0) app.addHook('onReady', async () => tick());
  app.addHook('onClose', async () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  });
  return job;
}
