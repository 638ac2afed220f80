import { and, eq, gt, isNull, lt, ne, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import {
  deviceTokens,
  favourites,
  prestataireProfiles,
  sessions,
  userTokens,
  users,
  type NewUser,
  type User,
} from '../../db/schema/index.js';

export async function findUserByEmail(db: DbTx, email: string) {
  const [user] = await db.select().from(users).where(eq(users.email, email)).limit(1);
  return user;
}

export async function findUserById(db: DbTx, id: number) {
  const [user] = await db.select().from(users).where(eq(users.id, id)).limit(1);
  return user;
}

export async function findProfile(db: DbTx, userId: number) {
  const [profile] = await db.select().from(prestataireProfiles).where(eq(prestataireProfiles.userId, userId)).limit(1);
  return profile;
}

/** Inserts a user unless the e-mail is taken; undefined on a duplicate, race included. */
export async function insertUser(db: DbTx, values: NewUser) {
  const [row] = await db.insert(users).values(values).onConflictDoNothing({ target: users.email }).returning();
  return row;
}

/** Inserts a prestataire's profile unless its SIRET is registered; undefined on a duplicate, race included. */
export async function insertProfile(db: DbTx, values: typeof prestataireProfiles.$inferInsert) {
  const [row] = await db.insert(prestataireProfiles).values(values).onConflictDoNothing({ target: prestataireProfiles.siret }).returning();
  return row;
}

/** The account row, deleted or not, locked until the end of the transaction. */
export async function lockUser(tx: DbTx, id: number) {
  const [user] = await tx.select().from(users).where(eq(users.id, id)).for('update');
  return user;
}

/** A live account's status, locked until the end of the transaction. */
export async function lockLiveUserStatus(tx: DbTx, id: number) {
  const [row] = await tx
    .select({ status: users.status })
    .from(users)
    .where(and(eq(users.id, id), isNull(users.deletedAt)))
    .for('update');
  return row;
}

/** What an anonymised account leaves behind: its push devices, one-time tokens and favourites. */
export async function deletePersonalRows(tx: DbTx, userId: number) {
  await tx.delete(deviceTokens).where(eq(deviceTokens.userId, userId));
  await tx.delete(userTokens).where(eq(userTokens.userId, userId));
  await tx.delete(favourites).where(eq(favourites.clientId, userId));
}

/** A deleted prestataire's public phone goes; the rest of the profile stays for its history. */
export async function clearPublicPhone(tx: DbTx, userId: number) {
  await tx.update(prestataireProfiles).set({ publicPhone: null, updatedAt: sql`now()` }).where(eq(prestataireProfiles.userId, userId));
}

export async function updateUser(db: DbTx, id: number, values: Partial<NewUser>): Promise<User | undefined> {
  const [row] = await db
    .update(users)
    .set({ ...values, updatedAt: sql`now()` })
    .where(eq(users.id, id))
    .returning();
  return row;
}

export async function insertSession(db: DbTx, values: { id: string; userId: number; ip: string; userAgent?: string }) {
  await db.insert(sessions).values(values);
}

/**
 * The live session's role: not revoked, not idle past its lifetime, its user active and not
 * deleted, so suspension, banning and deletion take effect on the next request. The touch of
 * `last_used_at` is skipped when the session was used in the last minute.
 */
export async function resolveSession(db: DbTx, sessionId: string, userId: number, ttlDays: number) {
  const idleLimit = sql`now() - make_interval(days => ${ttlDays})`;
  const [row] = await db
    .select({ role: users.role, lastUsedAt: sessions.lastUsedAt })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .where(
      and(
        eq(sessions.id, sessionId),
        eq(sessions.userId, userId),
        isNull(sessions.revokedAt),
        gt(sessions.lastUsedAt, idleLimit),
        eq(users.status, 'active'),
        isNull(users.deletedAt),
      ),
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
    .where(and(eq(sessions.userId, userId), isNull(sessions.revokedAt), exceptSessionId ? ne(sessions.id, exceptSessionId) : undefined));
}

/** The newest session start of a user: "signed in recently" for sensitive actions. */
export async function sessionStartedAt(db: DbTx, sessionId: string) {
  const [row] = await db.select({ createdAt: sessions.createdAt }).from(sessions).where(eq(sessions.id, sessionId)).limit(1);
  return row?.createdAt;
}

/** Whether another account holds the address as its e-mail. */
export async function emailTakenByAnother(db: DbTx, email: string, userId: number) {
  const [row] = await db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.email, email), ne(users.id, userId)))
    .limit(1);
  return row !== undefined;
}
