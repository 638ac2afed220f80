import { and, eq, inArray, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { connectedAccounts, paymentTransfers, prestataireProfiles, users, type ConnectedAccount } from '../../db/schema/index.js';

export async function findConnectedAccount(db: DbTx, prestataireId: number, opts: { lock?: boolean } = {}): Promise<ConnectedAccount | undefined> {
  const q = db.select().from(connectedAccounts).where(eq(connectedAccounts.prestataireId, prestataireId));
  const [row] = opts.lock ? await q.for('update') : await q;
  return row;
}

export async function findConnectedAccountById(db: DbTx, accountId: string): Promise<ConnectedAccount | undefined> {
  const [row] = await db.select().from(connectedAccounts).where(eq(connectedAccounts.accountId, accountId)).for('update');
  return row;
}

export async function insertConnectedAccount(db: DbTx, values: typeof connectedAccounts.$inferInsert): Promise<ConnectedAccount> {
  const [row] = await db.insert(connectedAccounts).values(values).returning();
  return row!;
}

export async function updateConnectedAccount(
  db: DbTx,
  prestataireId: number,
  patch: Partial<Omit<typeof connectedAccounts.$inferInsert, 'prestataireId'>>,
): Promise<ConnectedAccount> {
  const [row] = await db
    .update(connectedAccounts)
    .set({ ...patch, updatedAt: sql`now()` })
    .where(eq(connectedAccounts.prestataireId, prestataireId))
    .returning();
  return row!;
}

/** Serialises onboarding of one prestataire (its account row may not exist yet). */
export async function lockOnboarding(db: DbTx, prestataireId: number): Promise<void> {
  await db.execute(sql`select pg_advisory_xact_lock(hashtext('payments.onboarding'), ${prestataireId})`);
}


/** Prestataires whose shares wait for their account to receive transfers (the worker re-reads those accounts). */
export async function accountsWithWaitingShares(db: DbTx, reasons: string[]): Promise<{ prestataireId: number; accountId: string }[]> {
  return db
    .selectDistinct({ prestataireId: connectedAccounts.prestataireId, accountId: connectedAccounts.accountId })
    .from(paymentTransfers)
    .innerJoin(connectedAccounts, eq(connectedAccounts.prestataireId, paymentTransfers.prestataireId))
    .where(and(eq(paymentTransfers.status, 'held'), inArray(paymentTransfers.holdReason, reasons)));
}

/** Who opens an account or names a bank account's holder: the user and its business name. */
export async function userIdentity(db: DbTx, userId: number) {
  const [row] = await db
    .select({ email: users.email, firstName: users.firstName, lastName: users.lastName, businessName: prestataireProfiles.businessName })
    .from(users)
    .leftJoin(prestataireProfiles, eq(prestataireProfiles.userId, users.id))
    .where(eq(users.id, userId));
  return row!;
}
