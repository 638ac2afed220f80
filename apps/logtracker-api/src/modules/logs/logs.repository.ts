import { escapeLike, withTransaction } from '@repo/db';
import { and, count, desc, eq, gte, ilike, lte, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { logs, projectMembers, type LogLevel, type NewLog } from '../../db/schema/index.js';

export interface LogFilters {
  level?: LogLevel;
  from?: Date;
  to?: Date;
  search?: string;
  patternId?: number;
}

// 8 columns × 1 000 rows stays far below PostgreSQL's 65 535 parameters per statement.
const INSERT_CHUNK = 1_000;

/** Inserts every row or none (a batch is one transaction); answers the new ids in row order. */
export async function insertLogs(db: DbTx, rows: NewLog[]): Promise<number[]> {
  if (rows.length <= INSERT_CHUNK) {
    const inserted = await db.insert(logs).values(rows).returning({ id: logs.id });
    return inserted.map((r) => r.id);
  }
  return withTransaction(db, async (tx) => {
    const ids: number[] = [];
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      const inserted = await tx.insert(logs).values(rows.slice(i, i + INSERT_CHUNK)).returning({ id: logs.id });
      for (const r of inserted) ids.push(r.id);
    }
    return ids;
  });
}

export async function findLog(db: DbTx, logId: number) {
  const [row] = await db.select().from(logs).where(eq(logs.id, logId)).limit(1);
  return row;
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
  );
}

export async function listLogs(db: DbTx, projectId: number, filters: LogFilters, limit: number, offset: number) {
  const condition = where(projectId, filters);
  const [rows, totals] = await Promise.all([
    db.select().from(logs).where(condition).orderBy(desc(logs.timestamp), desc(logs.id)).limit(limit).offset(offset),
    db.select({ n: count() }).from(logs).where(condition),
  ]);
  return { rows, total: totals[0]?.n ?? 0 };
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
