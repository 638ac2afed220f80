import { and, eq, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { conversations, paymentTransfers, TRANSFER_STATUSES, type PaymentTransfer } from '../../db/schema/index.js';
import { defineStateMachine } from '../../lib/transitions.js';

/** What the activity log and the outbox keep of a transfer (its state named apart from the payment's). */
export function transferAudit(t: PaymentTransfer) {
  return {
    transfer_status: t.status,
    transfer_id: t.transferId,
    transfer_group: t.transferGroup,
    amount_cents: t.amountCents,
    reversed_cents: t.reversedCents,
    hold_reason: t.holdReason,
  };
}

/**
 * The prestataire's share of a payment (DESIGN.md §6): `held` → `sending` (its money move on its way)
 * → `paid` → `partially_reversed` → `reversed`; a refused transfer goes back to `held` until the
 * account can receive it. A payment has one transfer, so a move names it by its payment and is
 * logged and published on the payment (`payment.transferred`…), where the parties see it.
 */
export const transferMachine = defineStateMachine({
  table: paymentTransfers,
  key: paymentTransfers.paymentId,
  state: paymentTransfers.status,
  states: TRANSFER_STATUSES,
  label: 'Transfer',
  noun: 'transfer',
  stateName: 'status',
  subjectType: 'payment',
  audit: transferAudit,
  stamp: () => ({ updatedAt: sql`now()` }),
});

export async function findTransferByPayment(db: DbTx, paymentId: number): Promise<PaymentTransfer | undefined> {
  const [row] = await db.select().from(paymentTransfers).where(eq(paymentTransfers.paymentId, paymentId)).for('update');
  return row;
}

export async function findTransferByTransferId(db: DbTx, transferId: string): Promise<PaymentTransfer | undefined> {
  const [row] = await db.select().from(paymentTransfers).where(eq(paymentTransfers.transferId, transferId)).for('update');
  return row;
}

export async function heldTransfersOf(db: DbTx, prestataireId: number, reason: string): Promise<PaymentTransfer[]> {
  return db
    .select()
    .from(paymentTransfers)
    .where(and(eq(paymentTransfers.prestataireId, prestataireId), eq(paymentTransfers.status, 'held'), eq(paymentTransfers.holdReason, reason)))
    .for('update');
}

/** The first transfer of a payment; the caller holds the payment's lock, so no other is being created. */
export async function insertTransfer(db: DbTx, values: typeof paymentTransfers.$inferInsert): Promise<PaymentTransfer> {
  const [row] = await db.insert(paymentTransfers).values(values).returning();
  return row!;
}

/** What a held share will send, or why it waits: changed only while it is held (not a move of its state). */
export async function updateHeldTransfer(db: DbTx, id: number, patch: { amountCents?: number; holdReason?: string | null }): Promise<PaymentTransfer | undefined> {
  const [row] = await db
    .update(paymentTransfers)
    .set({ ...patch, updatedAt: sql`now()` })
    .where(and(eq(paymentTransfers.id, id), eq(paymentTransfers.status, 'held')))
    .returning();
  return row;
}

/** Whether a conversation about this appointment has a dispute open (its transfer waits). */
export async function hasOpenConversationDispute(db: DbTx, appointmentId: number): Promise<boolean> {
  const [row] = await db
    .select({ id: conversations.id })
    .from(conversations)
    .where(and(eq(conversations.appointmentId, appointmentId), eq(conversations.disputeStatus, 'open')))
    .limit(1);
  return row !== undefined;
}
