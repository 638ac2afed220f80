import { desc, eq, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { PAYOUT_STATUSES, payouts, type Payout } from '../../db/schema/index.js';
import { defineStateMachine } from '../../lib/transitions.js';

/** What the activity log and the outbox keep of a payout. */
export function payoutAudit(p: Payout) {
  return { id: p.id, payout_id: p.payoutId, amount_cents: p.amountCents, status: p.status, prestataire_id: p.prestataireId };
}

/**
 * A withdrawal to the prestataire's bank (DESIGN.md §6): `pending` → `paid` | `failed`, moved by the
 * processor's answer (its refusal of the payout move, or the bank's word in `payout.paid` and
 * `payout.failed`); logged and published as `payout.<state>`.
 */
export const payoutMachine = defineStateMachine({
  table: payouts,
  key: payouts.id,
  state: payouts.status,
  states: PAYOUT_STATUSES,
  label: 'Payout',
  noun: 'payout',
  stateName: 'status',
  subjectType: 'payout',
  audit: payoutAudit,
  stamp: () => ({ updatedAt: sql`now()` }),
});

export async function insertPayout(db: DbTx, values: typeof payouts.$inferInsert): Promise<Payout> {
  const [row] = await db.insert(payouts).values(values).returning();
  return row!;
}

export async function findPayoutByMove(db: DbTx, moveId: number): Promise<Payout | undefined> {
  const [row] = await db.select().from(payouts).where(eq(payouts.moveId, moveId)).for('update');
  return row;
}

export async function findPayoutByPayoutId(db: DbTx, payoutId: string): Promise<Payout | undefined> {
  const [row] = await db.select().from(payouts).where(eq(payouts.payoutId, payoutId)).for('update');
  return row;
}

/** The processor's payout, once its money move has the answer (not a move of the payout's state). */
export async function setProcessorPayout(db: DbTx, id: number, payoutId: string): Promise<Payout> {
  const [row] = await db
    .update(payouts)
    .set({ payoutId, updatedAt: sql`now()` })
    .where(eq(payouts.id, id))
    .returning();
  return row!;
}

export async function listPayouts(db: DbTx, prestataireId: number): Promise<Payout[]> {
  return db.select().from(payouts).where(eq(payouts.prestataireId, prestataireId)).orderBy(desc(payouts.createdAt), desc(payouts.id));
}
