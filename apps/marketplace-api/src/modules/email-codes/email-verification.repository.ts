import { and, eq, isNull, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { users } from '../../db/schema/index.js';

/** Sets the verification date once; undefined when the address was already verified. */
export async function markEmailVerified(db: DbTx, userId: number) {
  const [row] = await db
    .update(users)
    .set({ emailVerifiedAt: sql`now()`, updatedAt: sql`now()` })
    .where(and(eq(users.id, userId), isNull(users.emailVerifiedAt)))
    .returning();
  return row;
}
