import { createSessionsRepository } from '@repo/auth';
import { preparedOnce } from '@repo/db';
import { eq, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { sessions, users } from '../../db/schema/index.js';

export async function findUserByEmail(db: DbTx, email: string) {
  const [user] = await db.select().from(users).where(eq(users.email, email)).limit(1);
  return user;
}

// The profile of a signed-in user (GET /user): what presentUser shows, never the password hash.
const userById = preparedOnce((db) =>
  db
    .select({ id: users.id, name: users.name, email: users.email, createdAt: users.createdAt, updatedAt: users.updatedAt })
    .from(users)
    .where(eq(users.id, sql.placeholder('id')))
    .limit(1)
    .prepare('user_by_id'),
);

export async function findUserProfile(db: DbTx, id: number) {
  const [user] = await userById(db).execute({ id });
  return user;
}

/** Inserts a user unless the e-mail is taken; answers undefined on a duplicate, race included. */
export async function insertUser(db: DbTx, values: { name: string; email: string; passwordHash: string }) {
  const [row] = await db.insert(users).values(values).onConflictDoNothing({ target: users.email }).returning();
  return row;
}

/** The sessions behind bearer tokens: every log-tracker user has the one role `user`. */
export const accountSessions = createSessionsRepository({ table: sessions, user: { role: 'user' } });
