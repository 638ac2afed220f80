import { arrayLiteral, queryRows, timestamptz } from '@repo/db';
import { asc, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { projects } from '../../db/schema/index.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** A daily partition of logs (logs_pYYYYMMDD): one UTC day, `from` included, `to` excluded. */
export interface DailyPartition {
  name: string;
  from: Date;
  to: Date;
}

/** Every project and how many days it keeps its logs, by id. */
export function projectRetentions(db: DbTx) {
  return db.select({ id: projects.id, retentionDays: projects.retentionDays }).from(projects).orderBy(asc(projects.id));
}

/**
 * One batch: the project's oldest expired logs, at most `batchSize` of them, bounded by time
 * rather than by ids, so that the delete reads the (project, timestamp) index of the partitions
 * before the bound only. (Deleting `where id in (select … limit n)` joined the ids to every
 * expired partition, reading millions of rows per batch.) The bound is the instant of the
 * (batchSize + 1)-th oldest expired log; a run of more than a batch of logs sharing one instant
 * goes whole. Answers how many went and whether expired logs are left.
 */
export async function deleteExpiredBatch(db: DbTx, projectId: number, cutoff: Date, batchSize: number) {
  const [row] = await queryRows<{ deleted: number | string; more: boolean }>(
    db,
    sql`with edge as (
          select "timestamp" as t from logs where project_id = ${projectId} and "timestamp" < ${timestamptz(cutoff)}
           order by "timestamp" asc nulls first offset ${batchSize} limit 1
        ), bound as (
          select case
                   when e.t is null then ${timestamptz(cutoff)}
                   when exists (select 1 from logs where project_id = ${projectId} and "timestamp" < e.t) then e.t
                   else e.t + interval '1 microsecond'
                 end as b
            from (select (select t from edge) as t) as e
        ), gone as (
          delete from logs
           where project_id = ${projectId} and "timestamp" < ${timestamptz(cutoff)} and "timestamp" < (select b from bound)
          returning 1
        )
        select (select count(*) from gone) as deleted, exists (select 1 from edge) as more`,
  );
  return { deleted: Number(row?.deleted ?? 0), more: row?.more === true };
}

/** The name of a daily partition of logs: logs_pYYYYMMDD. */
const DAILY_PARTITION = /^logs_p[0-9]{8}$/;

/** The daily partitions (logs_pYYYYMMDD, one UTC day each), oldest first. */
export async function dailyPartitions(db: DbTx): Promise<DailyPartition[]> {
  const found = await queryRows<{ name: string }>(
    db,
    sql`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
         where i.inhparent = 'logs'::regclass and c.relname ~ ${DAILY_PARTITION.source} order by c.relname`,
  );
  return found.map(({ name }) => {
    const from = new Date(`${name.slice(6, 10)}-${name.slice(10, 12)}-${name.slice(12, 14)}T00:00:00Z`);
    return { name, from, to: new Date(from.getTime() + DAY_MS) };
  });
}

/** The name of the default partition of logs, where logs of a day without a partition land; undefined without one. */
export async function defaultPartition(db: DbTx): Promise<string | undefined> {
  const [parent] = await queryRows<{ fallback: string | null }>(
    db,
    sql`select nullif(partdefid, 0)::regclass::text as fallback from pg_partitioned_table where partrelid = 'logs'::regclass`,
  );
  return parent?.fallback ?? undefined;
}

/** `project_id = any(…)` of a list of project ids, as one array parameter. */
const anyOf = (ids: number[]) => sql`project_id = any(${arrayLiteral(ids)}::int[])`;

const tableOf = (partition: DailyPartition) => sql.raw(`"${partition.name}"`);

/** Whether the partition holds a log of one of the `keeping` projects, and whether it holds any log. */
export async function partitionOccupancy(db: DbTx, partition: DailyPartition, keeping: number[]) {
  const table = tableOf(partition);
  const [found] = await queryRows<{ held: boolean; occupied: boolean }>(
    db,
    sql`select exists (select 1 from ${table} where ${anyOf(keeping)}) as held, exists (select 1 from ${table}) as occupied`,
  );
  return { held: found?.held === true, occupied: found?.occupied === true };
}

/** The number of logs in the partition. */
export async function countPartition(db: DbTx, partition: DailyPartition): Promise<number> {
  const [counted] = await queryRows<{ n: number | string }>(db, sql`select count(*) as n from ${tableOf(partition)}`);
  return Number(counted?.n ?? 0);
}

/** Makes the statements of the transaction wait at most `timeoutMs` for a lock (error 55P03 beyond). */
export async function setLockTimeout(tx: DbTx, timeoutMs: number) {
  await tx.execute(sql`select set_config('lock_timeout', ${`${timeoutMs}ms`}, true)`);
}

/**
 * In the caller's transaction: locks the partition, checks that no project keeping its day has
 * logged there since it was looked at, then empties it (TRUNCATE) and takes its day's buckets
 * out of the rollups of the `expired` projects (every log of a day with a partition is in that
 * partition, and a bucket never spans two days). Answers false, having changed nothing, when a
 * kept log is there.
 */
export async function emptyPartition(tx: DbTx, partition: DailyPartition, keeping: number[], expired: number[]): Promise<boolean> {
  const table = tableOf(partition);
  const from = partition.from.toISOString();
  const to = partition.to.toISOString();
  await tx.execute(sql`lock table ${table} in access exclusive mode`);
  const [row] = await queryRows<{ kept: boolean }>(tx, sql`select exists (select 1 from ${table} where ${anyOf(keeping)}) as kept`);
  if (row?.kept) return false;
  await tx.execute(sql`truncate ${table}`);
  for (const rollup of ['log_level_counts', 'log_source_counts']) {
    await tx.execute(
      sql`delete from ${sql.raw(rollup)}
           where ${anyOf(expired)} and grain in ('minute', 'hour', 'day')
             and bucket >= ${from}::timestamptz and bucket < ${to}::timestamptz`,
    );
  }
  return true;
}

/**
 * Detaches the partition if it is still empty, in one statement of its own (no transaction around
 * it; logs_detach_empty_partition, migrations 0023 and 0025): every lock a detach needs, each
 * waited for at most `lockWaitMs` (error 55P03 beyond): the partition's, then the check that it
 * is empty (its lock keeps inserts out), then the default partition's (`fallback`, whose bounds it
 * widens), the logs table's last, and the detach. The logs table is held for the detach alone,
 * until the statement commits, with no round trip to the client in between. The
 * caller drops the table once it is detached (dropDetached). Answers false, having detached
 * nothing, when logs arrived there.
 * Not dropped here: a drop's commit scans every shared buffer for the pages of its files (with
 * 4 GB of shared_buffers, 20 to 40 ms under ingest), and it would do so holding the logs table,
 * every insert waiting; a detach's commit only records the change.
 */
export async function detachEmptyPartition(db: DbTx, partition: DailyPartition, fallback: string | undefined, lockWaitMs: number): Promise<boolean> {
  const [row] = await queryRows<{ detached: boolean }>(
    db,
    sql`select logs_detach_empty_partition(${partition.name}::regclass, ${fallback ?? null}::regclass, ${lockWaitMs}::int) as detached`,
  );
  return row?.detached === true;
}

/**
 * The daily partitions detached and not dropped yet (a run stopped between the two): tables
 * named as a daily partition of logs that are no partition of it any more.
 */
export async function detachedPartitions(db: DbTx): Promise<string[]> {
  const found = await queryRows<{ name: string }>(
    db,
    sql`select c.relname as name from pg_class c
         where c.relnamespace = (select relnamespace from pg_class where oid = 'logs'::regclass)
           and c.relkind = 'r' and c.relname ~ ${DAILY_PARTITION.source}
           and not exists (select 1 from pg_inherits i where i.inhrelid = c.oid)
         order by c.relname`,
  );
  return found.map(({ name }) => name);
}

/** Drops a detached daily partition (detachEmptyPartition): a table of its own, whose lock holds no insert. */
export async function dropDetached(db: DbTx, name: string): Promise<void> {
  if (!DAILY_PARTITION.test(name)) throw new Error(`not a daily partition of logs: ${name}`);
  await db.execute(sql`drop table if exists ${sql.identifier(name)}`);
}
