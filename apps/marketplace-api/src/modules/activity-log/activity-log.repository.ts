import { escapeLike } from '@repo/db';
import { and, count, desc, eq, gte, like, type SQL } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import type { DbTx } from '../../db/index.js';
import { activityLog, users } from '../../db/schema/index.js';
import { beforeBound, type UpperBound } from '../../lib/time-bounds.js';

export type NewActivityEntry = typeof activityLog.$inferInsert;

/** Appends one entry; the caller passes its transaction so the entry commits with the change. */
export async function insertActivity(db: DbTx, entry: NewActivityEntry) {
  await db.insert(activityLog).values(entry);
}

/** Rows per statement: a statement carries at most 65 535 parameters, and an entry takes nine. */
const ENTRIES_PER_INSERT = 5_000;

/** Appends entries (a bulk move's) with one multi-row insert per few thousand. */
export async function insertActivities(db: DbTx, entries: readonly NewActivityEntry[]) {
  for (let i = 0; i < entries.length; i += ENTRIES_PER_INSERT) {
    await db.insert(activityLog).values(entries.slice(i, i + ENTRIES_PER_INSERT));
  }
}

export interface ActivityFilters {
  actorId?: number;
  subjectType?: string;
  subjectId?: number;
  /** An exact action, or a prefix when it ends with a dot (`user.`). */
  action?: string;
  from?: Date;
  to?: UpperBound;
}

function activityWhere(f: ActivityFilters): SQL | undefined {
  return and(
    f.actorId !== undefined ? eq(activityLog.actorId, f.actorId) : undefined,
    f.subjectType !== undefined ? eq(activityLog.subjectType, f.subjectType) : undefined,
    f.subjectId !== undefined ? eq(activityLog.subjectId, f.subjectId) : undefined,
    f.action !== undefined
      ? f.action.endsWith('.')
        ? like(activityLog.action, `${escapeLike(f.action)}%`)
        : eq(activityLog.action, f.action)
      : undefined,
    f.from ? gte(activityLog.createdAt, f.from) : undefined,
    f.to ? beforeBound(activityLog.createdAt, f.to) : undefined,
  );
}

const actor = alias(users, 'actor');

/** Entries with their actor's current name, newest first (id breaks ties within one instant). */
export async function listActivity(db: DbTx, filters: ActivityFilters, limit: number, offset: number) {
  const where = activityWhere(filters);
  const rows = await db
    .select({
      entry: activityLog,
      actorFirstName: actor.firstName,
      actorLastName: actor.lastName,
    })
    .from(activityLog)
    .leftJoin(actor, eq(actor.id, activityLog.actorId))
    .where(where)
    .orderBy(desc(activityLog.createdAt), desc(activityLog.id))
    .limit(limit)
    .offset(offset);
  const [total] = await db.select({ n: count() }).from(activityLog).where(where);
  return { rows, total: total?.n ?? 0 };
}

export type ActivityRow = Awaited<ReturnType<typeof listActivity>>['rows'][number];
