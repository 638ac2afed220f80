import { escapeLike, queryRows } from '@repo/db';
import { and, eq, getTableColumns, gte, ilike, lte, sql, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { logs, newestFirst, projectMembers, type Log, type LogLevel, type NewLog } from '../../db/schema/index.js';
import type { LogCursor } from './logs.schemas.js';

export interface LogFilters {
  level?: LogLevel;
  from?: Date;
  to?: Date;
  search?: string;
  patternId?: number;
  /** Keyset position: only logs after it in the newest-first order. */
  after?: LogCursor;
}

/** Beyond this many matches, counting exactly costs more than the page itself: estimate instead. */
export const EXACT_COUNT_LIMIT = 10_000;

/**
 * Inserts rows in ONE statement: the batch travels as a single JSON parameter that PostgreSQL
 * unpacks with json_to_recordset. The statement text never changes, so it is prepared once; this
 * is as fast as a hand-built multi-row INSERT and much faster than building one per batch with
 * the query builder. One statement is atomic: every row or none. Answers the ids in row order.
 */
export async function insertLogs(db: DbTx, rows: NewLog[]): Promise<number[]> {
  const payload = JSON.stringify(
    rows.map((r) => ({
      project_id: r.projectId,
      level: r.level,
      message: r.message,
      context: r.context ?? null,
      source: r.source ?? null,
      timestamp: r.timestamp,
      received_at: r.receivedAt ?? new Date(),
    })),
  );
  const inserted = await queryRows<{ id: number | string }>(
    db,
    sql`insert into logs (project_id, level, message, context, source, "timestamp", received_at)
        select project_id, level, message, context, source, "timestamp", received_at
          from json_to_recordset(${payload}::json)
            as x(project_id integer, level text, message text, context jsonb, source text,
                 "timestamp" timestamptz, received_at timestamptz)
        returning id`,
  );
  return inserted.map((r) => Number(r.id));
}


function where(projectId: number, filters: LogFilters): SQL | undefined {
  return and(
    eq(logs.projectId, projectId),
    filters.level ? eq(logs.level, filters.level) : undefined,
    filters.from ? gte(logs.timestamp, filters.from) : undefined,
    filters.to ? lte(logs.timestamp, filters.to) : undefined,
    // The search text is matched literally: %, _ and \ lose their LIKE meaning.
    filters.search ? ilike(logs.message, `%${escapeLike(filters.search)}%`) : undefined,
    filters.patternId ? eq(logs.patternId, filters.patternId) : undefined,
    ...(filters.after
      ? [
          sql`(${logs.timestamp}, ${logs.id}) < (${cursorTime(filters.after)}, ${filters.after.id}::bigint)`,
          // Implied by the row comparison, but only this form lets PostgreSQL skip the partitions
          // of the days after the cursor.
          sql`${logs.timestamp} <= ${cursorTime(filters.after)}`,
        ]
      : []),
  );
}

function cursorTime(after: LogCursor): SQL {
  return sql`${after.timestamp}::timestamptz`;
}

/**
 * The row as listed, with its timestamp to the microsecond as text for the cursor: a Date keeps
 * milliseconds, and a cursor cut to the millisecond would skip the logs written (by SQL, by an
 * import) in the rest of that millisecond.
 */
const listed = {
  ...getTableColumns(logs),
  cursorTime: sql<string>`to_char(${logs.timestamp} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as('cursor_time'),
};

export type ListedLog = Log & { cursorTime: string };

export async function listLogs(db: DbTx, projectId: number, filters: LogFilters, limit: number, offset: number) {
  const condition = where(projectId, filters);
  // The count ignores the cursor: it is the size of the whole filtered list.
  const countCondition = where(projectId, { ...filters, after: undefined });
  const [rows, total] = await Promise.all([
    db.select(listed).from(logs).where(condition).orderBy(...newestFirst).limit(limit).offset(offset),
    countLogs(db, countCondition),
  ]);
  return { rows, ...total };
}

/**
 * Exact up to EXACT_COUNT_LIMIT (a count that stops there); past it, the planner's estimate of the
 * filtered rows, marked as such, so a million-row project answers as fast as a small one.
 */
async function countLogs(db: DbTx, condition: SQL | undefined) {
  const capped = db.select({ one: sql`1` }).from(logs).where(condition).limit(EXACT_COUNT_LIMIT + 1);
  const [row] = await queryRows<{ n: number }>(db, sql`select count(*)::int as n from (${capped}) as capped`);
  const exact = Number(row?.n ?? 0);
  if (exact <= EXACT_COUNT_LIMIT) return { total: exact, estimated: false };
  const plan = await queryRows<{ 'QUERY PLAN': { Plan: { 'Plan Rows': number } }[] | string }>(
    db,
    sql`explain (format json) ${db.select({ one: sql`1` }).from(logs).where(condition)}`,
  );
  const raw = plan[0]?.['QUERY PLAN'];
  const parsed = typeof raw === 'string' ? (JSON.parse(raw) as { Plan: { 'Plan Rows': number } }[]) : raw;
  const estimate = Math.round(parsed?.[0]?.Plan['Plan Rows'] ?? 0);
  return { total: Math.max(estimate, EXACT_COUNT_LIMIT + 1), estimated: true };
}

/** A log the user may read: one of a project they are a member of. */
export async function findLogForMember(db: DbTx, logId: number, userId: number) {
  const [row] = await db
    .select({ log: logs })
    .from(logs)
    .innerJoin(projectMembers, and(eq(projectMembers.projectId, logs.projectId), eq(projectMembers.userId, userId)))
    .where(eq(logs.id, logId))
    .limit(1);
  return row?.log;
}
