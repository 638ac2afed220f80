import { queryRows, timestamptz, withTransaction } from '@repo/db';
import { sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import type { DbTx } from '../db/index.js';
import { ROLLUP_KEEP_DAYS } from '../db/schema/index.js';
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
        // The counts leave the rollups as the delete trigger would take them out, grouped the same way.
        await tx.execute(
          sql`with minutes as (
                select project_id, date_bin('1 minute', "timestamp", '2000-01-01 00:00:00+00') as bucket, level, source, -count(*)::int as n
                  from ${table} group by 1, 2, 3, 4
              ), grains as (
                select m.project_id, g.grain, date_bin(g.width, m.bucket, '2000-01-01 00:00:00+00') as bucket, m.level, m.source, m.n
                  from minutes m
                 cross join (values ('minute', interval '1 minute'), ('hour', interval '1 hour'), ('day', interval '1 day')) as g (grain, width)
              ), levels as (
                insert into log_level_counts (project_id, grain, bucket, level, count)
                select project_id, grain, bucket, level, sum(n) from grains group by 1, 2, 3, 4
              )
              insert into log_source_counts (project_id, grain, bucket, source, count)
              select project_id, grain, bucket, source, sum(n) from grains group by 1, 2, 3, 4`,
        );
        await tx.execute(sql`drop table ${table}`);
      });
      dropped.push(p.name);
    }
    return dropped;
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
