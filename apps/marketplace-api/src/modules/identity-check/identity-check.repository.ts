import { and, eq, ne, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { kycVerifications, users, type KycStatus } from '../../db/schema/index.js';

export async function insertVerification(db: DbTx, values: typeof kycVerifications.$inferInsert) {
  const [row] = await db.insert(kycVerifications).values(values).returning();
  return row!;
}

/** Records the outcome on the account unless it was verified meanwhile (a verified identity stays verified). */
export async function setKycStatus(db: DbTx, userId: number, status: KycStatus) {
  const [row] = await db
    .update(users)
    .set({ kycStatus: status, updatedAt: sql`now()` })
    .where(and(eq(users.id, userId), ne(users.kycStatus, 'verified')))
    .returning();
  return row;
}
