import { and, asc, count, desc, eq, isNull } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { users } from '../../db/schema/index.js';

const liveAdmin = and(eq(users.role, 'admin'), isNull(users.deletedAt));

/**
 * Every live administrator, locked until the end of the transaction. Taken in id order so that two
 * transactions wanting the same rows queue instead of deadlocking; the second one then reads the
 * rows as the first left them (a status change or a deletion included).
 */
export async function lockLiveAdmins(tx: DbTx) {
  return tx.select({ id: users.id, status: users.status }).from(users).where(liveAdmin).orderBy(asc(users.id)).for('update');
}

export async function listAdmins(db: DbTx, limit: number, offset: number) {
  const rows = await db.select().from(users).where(liveAdmin).orderBy(desc(users.createdAt), desc(users.id)).limit(limit).offset(offset);
  const [total] = await db.select({ n: count() }).from(users).where(liveAdmin);
  return { rows, total: total?.n ?? 0 };
}

export async function findLiveAdmin(db: DbTx, userId: number) {
  const [user] = await db
    .select()
    .from(users)
    .where(and(eq(users.id, userId), liveAdmin))
    .limit(1);
  return user;
}
