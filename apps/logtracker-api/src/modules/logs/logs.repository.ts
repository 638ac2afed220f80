import { claimedStatement, claimedWrite, executeCount, preparedOnce, queryRows, timestamptz, withTransaction } from '@repo/db';
import { getTableColumns, sql, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { logs, type Log, type NewLog } from '../../db/schema/index.js';
import { patternOfLogColumn } from '../patterns/index.js';
import { SLICE_BYTES, type BatchText } from './batch-text.js';

/**
 * The project's row, locked against deletion until the inserting transaction ends. logs has no
 * foreign key to projects: PostgreSQL checked it once per row, a quarter of the cost of a batch
 * insert. Joined to once per statement instead, it keeps the same guarantee: an insert into a
 * project that is gone stores nothing, and a project being deleted waits for the inserts under
 * way, then deletes their logs too (see deleteProject).
 */
function lockedProject(projectId: number): SQL {
  return sql`(select id from projects where id = ${projectId}::int for key share) as project`;
}

/** What an insert wrote: how many rows, and their ids in row order when they were asked for. */
export interface Inserted {
  count: number;
  ids?: number[];
}

/**
 * Reading the ids back (RETURNING) costs a tenth of a batch insert's database time; only the
 * live tail needs them.
 */
async function runInsert(db: DbTx, insert: SQL, withIds: boolean): Promise<Inserted> {
  if (!withIds) return { count: await executeCount(db, insert) };
  const rows = await queryRows<{ id: number | string }>(db, sql`${insert} returning id`);
  return { count: rows.length, ids: rows.map((r) => Number(r.id)) };
}

/**
 * Runs one insert per slice of JSON, all in one transaction when there is more than one: every
 * row of every slice is stored, or none. One slice needs no transaction, a statement being atomic.
 * As the work of an Idempotency-Key, one slice counts its commit on the key's row in the same
 * statement (claimedStatement, a `WITH` in front of the insert; only while the project is there, as
 * the insert itself): its answer lost, the batch is taken for stored whole (`expected` rows: every
 * row or none) and the key's row tells whether it was. Read back with its ids (a live tail), it
 * runs in a transaction that counts it instead (claimedWrite).
 */
async function insertSlices(
  db: DbTx,
  projectId: number,
  expected: number,
  slices: Iterator<string>,
  statement: (json: string) => SQL,
  withIds: boolean,
): Promise<Inserted> {
  const first = slices.next();
  if (first.done) return { count: 0, ids: withIds ? [] : undefined };
  const second = slices.next();
  if (second.done) {
    if (withIds) return claimedWrite(db, (tx) => runInsert(tx, statement(first.value), true));
    return claimedStatement(
      db,
      (mark) => {
        const insert = statement(first.value);
        const counted = mark ? sql`with claimed as (${mark(sql`exists (select 1 from projects where id = ${projectId})`)}) ${insert}` : insert;
        return runInsert(db, counted, false);
      },
      () => ({ count: expected }),
    );
  }
  return withTransaction(db, async (tx) => {
    const total: Inserted = { count: 0, ids: withIds ? [] : undefined };
    for (let slice: IteratorResult<string> = first; !slice.done; slice = slice === first ? second : slices.next()) {
      const inserted = await runInsert(tx, statement(slice.value), withIds);
      total.count += inserted.count;
      total.ids?.push(...(inserted.ids ?? []));
    }
    return total;
  });
}

/** Rows as JSON arrays of about SLICE_BYTES each, serialised one slice at a time. */
export function* jsonSlices(rows: NewLog[]): Generator<string> {
  let parts: string[] = [];
  let size = 0;
  for (const r of rows) {
    const part = JSON.stringify({
      level: r.level,
      message: r.message,
      context: r.context ?? null,
      source: r.source ?? null,
      timestamp: r.timestamp,
      received_at: r.receivedAt ?? new Date(),
    });
    parts.push(part);
    size += part.length + 1;
    if (size >= SLICE_BYTES) {
      yield `[${parts.join(',')}]`;
      parts = [];
      size = 0;
    }
  }
  if (parts.length > 0) yield `[${parts.join(',')}]`;
}

/**
 * Inserts rows of one project: each slice of about SLICE_BYTES travels as a single JSON parameter
 * that PostgreSQL unpacks with json_to_recordset. The statement text never changes, so it is
 * prepared once; this is as fast as a hand-built multi-row INSERT and much faster than building
 * one per batch with the query builder, and a big batch is never serialised whole. All rows or
 * none are stored; nothing when the project is gone.
 */
export function insertLogs(db: DbTx, projectId: number, rows: NewLog[], withIds: boolean): Promise<Inserted> {
  return insertLogSlices(db, projectId, rows.length, jsonSlices(rows), withIds);
}

/** insertLogs of `count` rows already cut into slices of JSON (jsonSlices). */
export function insertLogSlices(db: DbTx, projectId: number, count: number, slices: Iterator<string>, withIds: boolean): Promise<Inserted> {
  return insertSlices(
    db,
    projectId,
    count,
    slices,
    (json) => sql`insert into logs (project_id, level, message, context, source, "timestamp", received_at)
        select project.id, level, message, context, source, "timestamp", received_at
          from json_to_recordset(${json}::json)
            as x(level text, message text, context jsonb, source text, "timestamp" timestamptz, received_at timestamptz)
         cross join ${lockedProject(projectId)}`,
    withIds,
  );
}

/** The entries of one request in a merged insert (insertGroups): a JSON array of entries, and when they were received. */
export interface EntryGroup {
  entries: string;
  received: Date;
}

/**
 * Inserts the entries of several requests for one project in one statement (createLogWrites). Each
 * group is a JSON array of entries as insertLogsJson reads them (a timestamp cut to the millisecond,
 * a missing one the time received; other fields ignored), stored with its own time received. The
 * groups travel in one JSON parameter, built by joining their texts (no entry is parsed or
 * serialised again), and the rows are stored in the groups' order, so that the ids read back split
 * by the groups' counts. All rows or none; nothing when the project is gone.
 */
export function insertGroups(db: DbTx, projectId: number, groups: readonly EntryGroup[], withIds: boolean): Promise<Inserted> {
  const json = `[${groups.map((g) => `{"received":"${g.received.toISOString()}","entries":${g.entries}}`).join(',')}]`;
  return runInsert(
    db,
    sql`insert into logs (project_id, level, message, context, source, "timestamp", received_at)
        select project.id, x.level, x.message, x.context, x.source, coalesce(date_trunc('milliseconds', x."timestamp"), g.received), g.received
          from ${lockedProject(projectId)}
         cross join json_to_recordset(${json}::json) as g(received timestamptz, entries json)
         cross join lateral json_to_recordset(g.entries)
            as x(level text, message text, context jsonb, source text, "timestamp" timestamptz)`,
    withIds,
  );
}

/**
 * Inserts the entries of a batch request straight from its JSON text, a slice at a time, when
 * every entry passed validation in its plainest form (BatchText.levels): PostgreSQL reads the
 * text, and the app never serialises the entries again (for a thousand entries, 7 ms of
 * JSON.stringify and a second copy of the batch in memory). Equivalent to insertLogs of the
 * validated entries: a timestamp is cut to the millisecond, as a Date holds it, and a missing one
 * is the time received. Unknown fields are ignored, as validation strips them. All rows or none
 * are stored; nothing when the project is gone.
 */
export function insertLogsJson(db: DbTx, projectId: number, batch: BatchText, receivedAt: Date): Promise<Inserted> {
  const received = timestamptz(receivedAt);
  const texts = (function* () {
    for (const slice of batch.slices()) yield slice.text;
  })();
  return insertSlices(
    db,
    projectId,
    batch.count,
    texts,
    (json) => sql`insert into logs (project_id, level, message, context, source, "timestamp", received_at)
        select project.id, level, message, context, source,
               coalesce(date_trunc('milliseconds', "timestamp"), ${received}), ${received}
          from json_to_recordset(${json}::json)
            as x(level text, message text, context jsonb, source text, "timestamp" timestamptz)
         cross join ${lockedProject(projectId)}`,
    false,
  );
}

/** The columns of a log, read from the row that log_for_member answers (aliased `l`). */
const fromFunction = Object.fromEntries(
  Object.entries(getTableColumns(logs)).map(([key, column]) => [key, sql.raw(`l."${column.name}"`).mapWith(column)]),
) as { [K in keyof Log]: SQL.Aliased<Log[K]> | SQL<Log[K]> };

/**
 * A log the user may read: one of a project they are a member of. An id says nothing of the day
 * a log belongs to: log_for_member (migrations 0007, 0021, 0022) probes the days whose ids hold
 * it, else every daily partition, with plans generic from its first call on a connection, where
 * planning the probes afresh cost more than running them. Its pattern comes in the same statement;
 * the statement is built once (preparedOnce), the same for every log.
 */
const logForMember = preparedOnce((db) =>
  db
    .select({ ...fromFunction, patternId: patternOfLogColumn({ projectId: sql`l.project_id`, timestamp: sql`l."timestamp"`, id: sql`l.id` }).mapWith(Number) })
    .from(sql`log_for_member(${sql.placeholder('logId')}::bigint, ${sql.placeholder('userId')}::int) as l`)
    .limit(1)
    .prepare('log_for_member'),
);

export async function findLogForMember(db: DbTx, logId: number, userId: number): Promise<(Log & { patternId: number | null }) | undefined> {
  const [row] = await logForMember(db).execute({ logId, userId });
  return row as (Log & { patternId: number | null }) | undefined;
}
