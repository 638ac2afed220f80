import { arrayLiteral, queryRows, sqlState, timestamptz, withTransaction } from '@repo/db';
import { sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import type { RollupGrain } from '../../db/schema/index.js';

/** The rollup tables, each with the column it counts by. */
const ROLLUP_KEYS = { log_level_counts: 'level', log_source_counts: 'source' } as const;

export type RollupTable = keyof typeof ROLLUP_KEYS;

export const ROLLUP_TABLES = Object.keys(ROLLUP_KEYS) as RollupTable[];

/**
 * Creates the daily partitions of logs missing from the day before `at` (UTC) to a week after it;
 * answers how many it created.
 */
export async function ensureDailyPartitions(db: DbTx, at: Date): Promise<number> {
  const [row] = await queryRows<{ created: number }>(
    db,
    sql`select logs_ensure_partitions((${timestamptz(at)} at time zone 'UTC')::date - 1,
                                      (${timestamptz(at)} at time zone 'UTC')::date + 7) as created`,
  );
  return Number(row?.created ?? 0);
}

/**
 * Deletes the rows of one grain of a rollup whose bucket starts before `before`; answers how many.
 * The rollups' index leads with the project, so the rows are found project by project through it:
 * each project the rollup holds (a skip over the index, deleted projects' rows included: they have
 * no foreign key), then its expired range of the grain. A filter on the grain and the bucket alone
 * read the whole table on every pass, expired rows or not, and the merges (a delete and an insert
 * per bucket) leave it many times the size of its rows: 430 ms a grain for 250 000 rows in 333 MB,
 * six times a minute-long pass, amid the requests of an instance that has just started; through
 * the index, a pass with nothing expired takes 0.4 ms. (`offset 0` keeps the planner from folding
 * the per-project lookup into a join of the whole table.)
 */
export async function deleteRollupsBefore(db: DbTx, rollup: RollupTable, grain: RollupGrain, before: Date): Promise<number> {
  const table = sql.raw(rollup);
  const [row] = await queryRows<{ n: number }>(
    db,
    sql`with recursive keyed(project_id) as (
          (select project_id from ${table} order by project_id limit 1)
          union all
          select (select t.project_id from ${table} t where t.project_id > k.project_id order by t.project_id limit 1)
            from keyed k where k.project_id is not null
        ), expired as (
          select e.ctid from keyed k
           cross join lateral (
             select ctid from ${table} where project_id = k.project_id and grain = ${grain} and bucket < ${timestamptz(before)} offset 0
           ) e
        ), deleted as (
          delete from ${table} where ctid = any(array(select ctid from expired)) returning 1
        )
        select count(*)::int as n from deleted`,
  );
  return Number(row?.n ?? 0);
}

/**
 * Merges the rows of a rollup appended since the last pass (the partial index finds them) in
 * buckets that start before `closedBefore`, into one row per bucket and key; answers how many
 * rows fewer the rollup holds.
 */
export async function mergeFreshRollups(db: DbTx, rollup: RollupTable, closedBefore: Date): Promise<number> {
  const table = sql.raw(rollup);
  const column = sql.raw(ROLLUP_KEYS[rollup]);
  const [row] = await queryRows<{ n: number }>(
    db,
    sql`with fresh as (
          select distinct project_id, grain, bucket from ${table} where not compacted and bucket < ${timestamptz(closedBefore)}
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
  return Number(row?.n ?? 0);
}

/** A partition whose statistics are stale, and how long until it may be analysed again. */
export interface StalePartition {
  name: string;
  /** 0: now. More: it was analysed less than the spacing ago, and waits this many milliseconds. */
  dueInMs: number;
}

/**
 * Daily partitions of logs written to since their statistics were last gathered by more than
 * `growth` of the rows they had then (and at least `minRows`), or by at least `minRows` where a
 * project of `stored` stored more logs than the statistics say the partition holds of it, most
 * changed first, each with the time left before it may be analysed again: `spacingMs` after its
 * last analysis (by anyone: an instance of the app or autovacuum). Read from the server's activity
 * statistics, which the writing connections report about once a second.
 * `stored`: logs stored per project since this instance's last analysis. A burst of a new project
 * into a day already large (300 000 logs into one of 3.5 million) grows it by less than `growth`,
 * and the statistics, which know nothing of the project, priced its searches at a handful of rows:
 * 100–270 ms each instead of 3–7. What the statistics say of a project is the share of its
 * partition they give it: its own among the most common values, else the average of the others.
 */
export async function staleLogPartitions(
  db: DbTx,
  minRows: number,
  growth: number,
  spacingMs: number,
  limit: number,
  stored: ReadonlyMap<number, number> = new Map(),
): Promise<StalePartition[]> {
  // This connection's own pending counts first (with PGlite, the one connection is also the writer's).
  await db.execute(sql`do $$ begin perform pg_stat_force_next_flush(); exception when undefined_function then null; end $$`);
  const many = [...stored].filter(([, n]) => n >= minRows);
  // Looked up for a partition written to by at least minRows only (the condition before it), and
  // only when a project stored that many: no statistics read on a pass with nothing to weigh. A
  // partition never analysed has no statistics, and is stale by its growth anyway.
  const outgrown =
    many.length === 0
      ? sql`false`
      : sql`exists (
              select 1
                from unnest(${arrayLiteral(many.map(([p]) => p))}::int[], ${arrayLiteral(many.map(([, n]) => n))}::float8[]) as f (project, n)
                join pg_stats st on st.schemaname = s.schemaname and st.tablename = s.relname and st.attname = 'project_id'
                cross join lateral (
                  select st.most_common_vals::text::int[] as vals, st.most_common_freqs as freqs,
                         greatest((select c.reltuples from pg_class c where c.oid = s.relid), 0) as rows
                ) as known
               where f.n > known.rows * coalesce(
                       known.freqs[array_position(known.vals, f.project)],
                       greatest(0, 1 - st.null_frac - coalesce((select sum(q) from unnest(known.freqs) as q), 0))
                         / greatest(1, (case when st.n_distinct < 0 then -st.n_distinct * known.rows else st.n_distinct end)
                                       - coalesce(cardinality(known.vals), 0))))`;
  const rows = await queryRows<{ name: string; due_in_ms: number | string }>(
    db,
    sql`select s.relname as name,
               greatest(0, ceil(extract(epoch from (
                 greatest(s.last_analyze, s.last_autoanalyze) + ${spacingMs}::int * interval '1 millisecond' - clock_timestamp()
               )) * 1000))::int as due_in_ms
          from pg_stat_user_tables s
          join pg_inherits i on i.inhrelid = s.relid
         where i.inhparent = 'logs'::regclass
           and (s.n_mod_since_analyze >= greatest(${minRows}::bigint, ${growth}::float8 * greatest(s.n_live_tup - s.n_mod_since_analyze, 0))
                or (s.n_mod_since_analyze >= ${minRows}::bigint and ${outgrown}))
         order by s.n_mod_since_analyze desc
         limit ${limit}`,
  );
  return rows.map((r) => ({ name: r.name, dueInMs: Number(r.due_in_ms ?? 0) }));
}

/**
 * How long the statistics keeper's statements wait for a lock before leaving the partition for a
 * later pass. Autovacuum holds the locks they need while it vacuums a partition (the table's, and
 * the GIN metapage's while it merges the pending list), and a backend that waits a second
 * (deadlock_timeout) behind it cancels it: the vacuum's work so far is lost, and it starts over at
 * its next round. The keeper analysed today's partition every second of sustained ingest, and
 * autovacuum's vacuum of it was cancelled again and again.
 */
const KEEPER_LOCK_TIMEOUT_MS = 100;

/** Runs `fn` in a transaction whose statements wait at most KEEPER_LOCK_TIMEOUT_MS for a lock; undefined when one timed out. */
async function withoutWaiting<T>(db: DbTx, fn: (tx: DbTx) => Promise<T>): Promise<T | undefined> {
  try {
    return await withTransaction(db, async (tx) => {
      await tx.execute(sql`select set_config('lock_timeout', ${`${KEEPER_LOCK_TIMEOUT_MS}ms`}, true)`);
      return fn(tx);
    });
  } catch (error) {
    if (sqlState(error) === '55P03') return undefined;
    throw error;
  }
}

/**
 * Gathers the planner's statistics of these partitions, each unless another instance is doing it
 * now (an advisory lock held for its transaction) or autovacuum holds it (withoutWaiting); answers
 * the partitions analysed. Their search keys' pending lists are left to mergeSearchPending, which
 * the job runs once ingest pauses: merged after each analysis, during sustained ingest, they cost
 * the database more than the inserts themselves did (see jobs/log-statistics.ts).
 */
export async function analyzePartitions(db: DbTx, names: string[]): Promise<string[]> {
  const analysed: string[] = [];
  for (const name of names) {
    const done = await withoutWaiting(db, async (tx) => {
      const [lock] = await queryRows<{ ok: boolean }>(tx, sql`select pg_try_advisory_xact_lock(hashtext('logs_statistics')) as ok`);
      if (!lock?.ok) return false;
      await tx.execute(sql`analyze ${sql.identifier(name)}`);
      return true;
    });
    if (done) analysed.push(name);
  }
  return analysed;
}

/**
 * Merges the pending lists of the logs partitions' GIN (search keys) indexes into the indexes
 * proper; answers how many pending pages were merged. GIN appends new entries to a pending list
 * (fastupdate), which every search of the partition reads whole, and inserts merge it only past its
 * limit (4 MB, about 2 000 logs): a burst that ends leaves up to that much for every later search to
 * read (9–12 ms a search on this bench's machine, against 3 ms merged). Every partition is looked
 * at, an empty list costing a read of its metapage: backfills land anywhere, and the server's row
 * counts that would say where can trail a writer by ten seconds. Each index on its own, never
 * waiting behind autovacuum (withoutWaiting): one it is vacuuming is merged by it. A partition
 * dropped meanwhile (retention) is passed over.
 */
export async function mergeSearchPending(db: DbTx): Promise<number> {
  const indexes = await queryRows<{ oid: number | string }>(
    db,
    sql`select x.indexrelid::int8 as oid
          from pg_inherits i
          join pg_index x on x.indrelid = i.inhrelid
          join pg_class c on c.oid = x.indexrelid
          join pg_am a on a.oid = c.relam
         where i.inhparent = 'logs'::regclass and a.amname = 'gin'`,
  );
  let pages = 0;
  for (const index of indexes) {
    try {
      const merged = await withoutWaiting(db, (tx) =>
        queryRows<{ pages: number | string | null }>(tx, sql`select gin_clean_pending_list(${Number(index.oid)}::oid::regclass) as pages`),
      );
      pages += Number(merged?.[0]?.pages ?? 0);
    } catch (error) {
      // "could not open relation with OID …" (XX000), or the table gone (42P01): dropped since
      // the catalogue was read.
      if (!['XX000', '42P01'].includes(sqlState(error) ?? '')) throw error;
    }
  }
  return pages;
}

/**
 * Replaces the search keys common in each project's logs stamped since `since`
 * (log_search_refresh_common_keys, migration 0020): counted on a sample of about `sampleRows` logs,
 * kept where a project's share reaches `minShare`, for the projects with `minLogs` in the sample.
 * Answers the keys kept.
 */
export async function refreshCommonSearchKeys(db: DbTx, since: Date, sampleRows: number, minShare: number, minLogs: number): Promise<number> {
  const [row] = await queryRows<{ kept: number | string }>(
    db,
    sql`select log_search_refresh_common_keys(${timestamptz(since)}, ${sampleRows}::int, ${minShare}::real, ${minLogs}::int) as kept`,
  );
  return Number(row?.kept ?? 0);
}

/**
 * Replaces the ranges of ids each daily partition holds (log_partition_ids_refresh, migration
 * 0021), which a log looked up by id is first probed by. Answers the partitions with a range.
 */
export async function refreshLogPartitionIds(db: DbTx): Promise<number> {
  const [row] = await queryRows<{ kept: number | string }>(db, sql`select log_partition_ids_refresh() as kept`);
  return Number(row?.kept ?? 0);
}
