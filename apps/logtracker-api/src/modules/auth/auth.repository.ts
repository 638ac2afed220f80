import { and, eq, gt, isNull, lt, ne, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { sessions, users } from '../../db/schema/index.js';

export async function findUserByEmail(db: DbTx, email: string) {
  const [user] = await db.select().from(users).where(eq(users.email, email)).limit(1);
  return user;
}

export async function findUserById(db: DbTx, id: number) {
  const [user] = await db.select().from(users).where(eq(users.id, id)).limit(1);
  return user;
}

/** Inserts a user unless the e-mail is taken; answers undefined on a duplicate, race included. */
export async function insertUser(db: DbTx, values: { name: string; email: string; passwordHash: string }) {
  const [row] = await db.insert(users).values(values).onConflictDoNothing({ target: users.email }).returning();
  return row;
}

export async function insertSession(
  db: DbTx,
  values: { id: string; userId: number; ip: string; userAgent?: string },
) {
  await db.insert(sessions).values(values);
}

/**
 * The live session's user, sliding its `last_used_at`. The touch is skipped when the session was
 * used in the last minute, so a busy client costs one read per request, not one write.
 */
export async function resolveSession(db: DbTx, sessionId: string, userId: number, ttlDays: number) {
  const idleLimit = sql`now() - make_interval(days => ${ttlDays})`;
  const [row] = await db
    .select({ userId: sessions.userId, lastUsedAt: sessions.lastUsedAt })
    .from(sessions)
    .where(
      and(eq(sessions.id, sessionId), eq(sessions.userId, userId), isNull(sessions.revokedAt), gt(sessions.lastUsedAt, idleLimit)),
    )
    .limit(1);
  if (!row) return undefined;
  if (Date.now() - row.lastUsedAt.getTime() > 60_000) {
    await db
      .update(sessions)
      .set({ lastUsedAt: sql`now()` })
      .where(and(eq(sessions.id, sessionId), lt(sessions.lastUsedAt, sql`now() - interval '60 seconds'`)));
  }
  return row;
}

export async function revokeSession(db: DbTx, sessionId: string) {
  await db.update(sessions).set({ revokedAt: sql`now()` }).where(and(eq(sessions.id, sessionId), isNull(sessions.revokedAt)));
}

export async function revokeUserSessions(db: DbTx, userId: number, exceptSessionId?: string) {
  await db
    .update(sessions)
    .set({ revokedAt: sql`now()` })
    .where(
      and(
        eq(sessions.userId, userId),
        isNull(sessions.revokedAt),
        exceptSessionId ? ne(sessions.id, exceptSessionId) : undefined,
      ),
    );
}
