import { and, eq, isNull, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { users } from '../../db/schema/index.js';
import type { IdentityProvider } from '../../integrations/identity/identity.js';

const subjectColumn = (provider: IdentityProvider) => (provider === 'google' ? users.googleSubject : users.appleSubject);

/** The live account signed in with this provider identity. */
export async function findUserBySubject(db: DbTx, provider: IdentityProvider, subject: string) {
  const [user] = await db
    .select()
    .from(users)
    .where(and(eq(subjectColumn(provider), subject), isNull(users.deletedAt)))
    .limit(1);
  return user;
}

/** The account row, locked for the rest of the transaction. */
export async function lockUser(db: DbTx, id: number) {
  const [user] = await db.select().from(users).where(eq(users.id, id)).for('update');
  return user;
}

/**
 * Attaches a provider identity to an account that has none for this provider, marking its e-mail
 * verified (the provider vouched for it). `dropPassword` clears a password nobody proved to own.
 */
export async function linkSubject(
  db: DbTx,
  userId: number,
  provider: IdentityProvider,
  subject: string,
  opts: { dropPassword: boolean },
) {
  const column = subjectColumn(provider);
  const [row] = await db
    .update(users)
    .set({
      ...(provider === 'google' ? { googleSubject: subject } : { appleSubject: subject }),
      emailVerifiedAt: sql`coalesce(${users.emailVerifiedAt}, now())`,
      ...(opts.dropPassword ? { passwordHash: null } : {}),
      lastLoginAt: sql`now()`,
      updatedAt: sql`now()`,
    })
    .where(and(eq(users.id, userId), isNull(column), isNull(users.deletedAt)))
    .returning();
  return row;
}

export async function touchLastLogin(db: DbTx, userId: number) {
  await db.update(users).set({ lastLoginAt: sql`now()` }).where(eq(users.id, userId));
}
