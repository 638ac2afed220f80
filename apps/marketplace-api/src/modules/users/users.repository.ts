import { createSessionsRepository } from '@repo/auth';
import { and, eq, isNull, ne, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { prestataireProfiles, sessions, users, type NewUser, type User } from '../../db/schema/index.js';

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

export async function updateUser(db: DbTx, id: number, values: Partial<NewUser>): Promise<User | undefined> {
  const [row] = await db
    .update(users)
    .set({ ...values, updatedAt: sql`now()` })
    .where(eq(users.id, id))
    .returning();
  return row;
}

/**
 * The sessions behind bearer tokens. A session lives while its user is active and not deleted, so
 * suspension, banning and deletion take effect on the next request.
 */
export const accountSessions = createSessionsRepository({
  table: sessions,
  user: { table: users, id: users.id, role: users.role, allowed: and(eq(users.status, 'active'), isNull(users.deletedAt)) },
});

export const revokeUserSessions = accountSessions.revokeAllForUser;

/** When the session began: "signed in recently" for sensitive actions. */
export const sessionStartedAt = accountSessions.startedAt;

/** Whether another account holds the address as its e-mail. */
export async function emailTakenByAnother(db: DbTx, email: string, userId: number) {
  const [row] = await db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.email, email), ne(users.id, userId)))
    .limit(1);
  return row !== undefined;
}
