import { createSessionsRepository } from '@repo/auth';
import { preparedOnce } from '@repo/db';
import { and, eq, isNull, ne, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import {
  deviceTokens,
  favourites,
  prestataireProfiles,
  sessions,
  userTokens,
  USER_STATUSES,
  users,
  type NewUser,
  type User,
} from '../../db/schema/index.js';
import { defineStateMachine } from '../../lib/transitions.js';

/**
 * An account's status (DESIGN.md §6: active | suspended | banned), moved by `transition`; a deleted
 * (anonymised) account is not found. The reason is kept beside the state and logged with it.
 */
export const userStatusMachine = defineStateMachine({
  table: users,
  key: users.id,
  state: users.status,
  states: USER_STATUSES,
  scope: () => isNull(users.deletedAt),
  label: 'User',
  noun: 'account',
  stateName: 'status',
  subjectType: 'user',
  audit: (u) => ({ status: u.status, reason: u.statusReason }),
  stamp: () => ({ updatedAt: sql`now()` }),
});

export async function findUserByEmail(db: DbTx, email: string) {
  const [user] = await db.select().from(users).where(eq(users.email, email)).limit(1);
  return user;
}

const userById = preparedOnce((db) =>
  db.select().from(users).where(eq(users.id, sql.placeholder('id'))).limit(1).prepare('user_by_id'),
);

export async function findUserById(db: DbTx, id: number) {
  const [user] = await userById(db).execute({ id });
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
