import { queryRows, timestamptz, withTransaction } from '@repo/db';
import { sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import type { DbTx } from '../db/index.js';
import type { JobLogger } from './retention.js';

const DAY_MS = 86_400_000;

export interface MaintenanceResult {
  partitionsCreated: number;
  partitionsDropped: string[];
  rollupRowsCompacted: number;
}

/**
 * Upkeep of the log storage:
 * - daily partitions exist a week ahead, so new logs never land in the default partition;
 * - a day older than every project's retention is dropped whole (its counts taken out of the
 *   rollups first), instead of deleted row by row;
 * - rollup rows, appended per insert statement, are merged per bucket, and rows older than any
 *   statistics range are removed, so statistics read a small, bounded table.
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

  async function dropExpiredPartitions() {
    const [longest] = await queryRows<{ days: number | null }>(db, sql`select max(retention_days) as days from projects`);
    const keepDays = Number(longest?.days ?? 3650);
    // A partition whose whole day is older than the longest retention holds only expired logs.
    const horizon = new Date(now().getTime() - keepDays * DAY_MS);
    const partitions = await queryRows<{ name: string; upper: Date | string }>(
      db,
      sql`select c.relname as name,
                 (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \\(''([^'']+)''\\)'))[1]::timestamptz as upper
            from pg_inherits i
            join pg_class c on c.oid = i.inhrelid
           where i.inhparent = 'logs'::regclass and c.relname like 'logs_p%'`,
    );
    const dropped: string[] = [];
    for (const p of partitions) {
      if (new Date(p.upper).getTime() > horizon.getTime()) continue;
      if (!/^logs_p\d{8}$/.test(p.name)) continue;
      const table = sql.raw(`"${p.name}"`);
      await withTransaction(db, async (tx) => {
        for (const [rollup, width] of [
          ['log_counts_minute', '1 minute'],
          ['log_counts_hour', '1 hour'],
        ] as const) {
          await tx.execute(
            sql`insert into ${sql.raw(rollup)} (project_id, bucket, level, source, count)
                select project_id, date_bin(${width}::interval, "timestamp", '2000-01-01 00:00:00+00'), level, source, -count(*)
                  from ${table} group by 1, 2, 3, 4`,
          );
        }
        await tx.execute(sql`drop table ${table}`);
      });
      dropped.push(p.name);
    }
    return dropped;
  }

  async function compactRollups() {
    let compacted = 0;
    for (const [rollup, keep] of [
      ['log_counts_minute', 3 * DAY_MS],
      ['log_counts_hour', 62 * DAY_MS],
    ] as const) {
      const table = sql.raw(rollup);
      await db.execute(sql`delete from ${table} where bucket < ${timestamptz(new Date(now().getTime() - keep))}`);
      // Buckets closed for a minute are final except for backfills, which simply append again.
      const [row] = await queryRows<{ n: number }>(
        db,
        sql`with moved as (
              delete from ${table} where bucket < ${timestamptz(new Date(now().getTime() - 60_000))}
              returning project_id, bucket, level, source, count
            ), merged as (
              insert into ${table} (project_id, bucket, level, source, count)
              select project_id, bucket, level, source, sum(count)::int from moved
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
    const partitionsDropped = await dropExpiredPartitions();
    const rollupRowsCompacted = await compactRollups();
    const result = { partitionsCreated, partitionsDropped, rollupRowsCompacted };
    if (partitionsCreated > 0 || partitionsDropped.length > 0) logger.info(result, 'log storage maintenance');
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
