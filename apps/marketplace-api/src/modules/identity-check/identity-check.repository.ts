import { isNull, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { KYC_STATUSES, kycVerifications, users, type KycStatus } from '../../db/schema/index.js';
import { defineStateMachine } from '../../lib/transitions.js';

/**
 * A client's identity check, moved by `transition`: each check records its outcome, `verified` or
 * `rejected`, on the account; a verified identity stays verified (no move leaves it). A deleted
 * account is not found.
 */
export const kycMachine = defineStateMachine({
  table: users,
  key: users.id,
  state: users.kycStatus,
  states: KYC_STATUSES,
  scope: () => isNull(users.deletedAt),
  label: 'User',
  noun: 'client',
  stateName: 'identity status',
  subjectType: 'user',
  audit: (u) => ({ kyc_status: u.kycStatus }),
  stamp: () => ({ updatedAt: sql`now()` }),
});

/** The states a check may leave from: all but `verified`. */
export const UNVERIFIED = KYC_STATUSES.filter((s): s is Exclude<KycStatus, 'verified'> => s !== 'verified');

export async function insertVerification(db: DbTx, values: typeof kycVerifications.$inferInsert) {
  const [row] = await db.insert(kycVerifications).values(values).returning();
  return row!;
}
