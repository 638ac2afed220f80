import { and, eq, isNull, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { users } from '../../db/schema/index.js';

/** Sets the password of an account that is still active and not deleted; undefined otherwise. */
export async function setPasswordHash(db: DbTx, userId: number, passwordHash: string) {
  const [row] = await db
    .update(users)
    .set({ passwordHash, updatedAt: sql`now()` })
    .where(and(eq(users.id, userId), eq(users.status, 'active'), isNull(users.deletedAt)))
    .returning();
  return row;
}
