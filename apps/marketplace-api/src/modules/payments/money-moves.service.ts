import type { DbTx } from '../../db/index.js';
import type { MoneyMove } from '../../db/schema/index.js';
import type { Caller } from '../../lib/context.js';
import { createMoneyMover, type MoveOutcome } from './money-moves.js';
import * as moves from './money-moves.repository.js';
import type { PaymentsContext } from './payments.context.js';
import * as repo from './payments.repository.js';
import type { PayoutsService } from './payouts.service.js';
import type { RefundsService } from './refunds.service.js';
import type { TransfersService } from './transfers.service.js';

/**
 * The money moves of payments (DESIGN.md §11) at the processor: what each kind asks it (with the
 * attempt's key, and the move's id as the object's reference), how its object is found again when
 * the key keeps answering "unknown", and where each answer is recorded (refunds, transfers,
 * reversals, payouts). The engine that drives them through their phases is money-moves.ts.
 */
export function createMoneyMoves(
  ctx: PaymentsContext,
  parts: { refunds: RefundsService; transfers: TransfersService; payouts: PayoutsService },
  opts: { leaseMs: number },
) {
  const { db, raw } = ctx;

  /** One attempt of a move at the processor, with the attempt's key; no transaction is open. */
  async function callProcessor(move: MoneyMove): Promise<string> {
    const key = move.idempotencyKey ?? moves.moveKey(move.kind, move.id, move.attempt);
    // The processor keeps the move's id on its object, so that reconciliation finds which move made it.
    const reference = `move-${move.id}`;
    switch (move.kind) {
      case 'refund': {
        const payment = (await repo.findPayment(db, move.paymentId!))!;
        return (await raw.refund({ intentId: payment.intentId, amountCents: move.amountCents, reason: move.reason ?? 'refund', idempotencyKey: key, reference })).id;
      }
      case 'transfer': {
        const payment = (await repo.findPayment(db, move.paymentId!))!;
        return (
          await raw.createTransfer({
            amountCents: move.amountCents,
            currency: move.currency,
            destination: move.target!,
            transferGroup: `appointment_${payment.appointmentId}`,
            sourceCharge: payment.chargeId,
            idempotencyKey: key,
            reference,
          })
        ).id;
      }
      case 'reversal':
        return (await raw.reverseTransfer({ transferId: move.target!, amountCents: move.amountCents, idempotencyKey: key, reference })).id;
      case 'payout':
        return (await raw.createPayout({ accountId: move.target!, amountCents: move.amountCents, currency: move.currency, idempotencyKey: key, reference })).id;
    }
  }

  /** The processor's object a move made, found by the reference the move gave it; null when there is none. */
  async function findAtProcessor(move: MoneyMove): Promise<string | null> {
    const reference = `move-${move.id}`;
    const payment = move.paymentId === null ? undefined : await repo.findPayment(db, move.paymentId);
    switch (move.kind) {
      case 'refund':
        return (await raw.listRefunds(payment!.intentId)).find((r) => r.reference === reference && r.status !== 'failed' && r.status !== 'canceled')?.id ?? null;
      case 'transfer':
        return (await raw.listTransfers(`appointment_${payment!.appointmentId}`)).find((t) => t.reference === reference)?.id ?? null;
      case 'reversal':
        return (
          (await raw.listTransfers(`appointment_${payment!.appointmentId}`)).flatMap((t) => t.reversals).find((r) => r.reference === reference)?.id ?? null
        );
      case 'payout':
        return (await raw.listPayouts(move.target!)).find((p) => p.reference === reference && p.status !== 'failed' && p.status !== 'canceled')?.id ?? null;
    }
  }

  /** A move's answer, recorded in the transaction that settles it (the worker's actor: the system). */
  async function moveSettled(tx: DbTx, move: MoneyMove, outcome: MoveOutcome): Promise<void> {
    const actor: Caller = { kind: 'system', requestId: `money-move-${move.id}` };
    const payment = move.paymentId === null ? undefined : await repo.findPayment(tx, move.paymentId, { lock: true });
    if (!outcome.ok) {
      const details = { move_id: move.id, kind: move.kind, amount_cents: move.amountCents, attempt: move.attempt, code: outcome.code, error: outcome.message };
      if (move.kind === 'transfer' && payment) await parts.transfers.transferRefused(tx, actor, payment, details);
      else if (move.kind === 'payout') await parts.payouts.payoutRefused(tx, actor, move, outcome.message, details);
      else await ctx.recorder.record(actor, `payment.${move.kind}_failed`, { type: 'payment', id: move.paymentId }, { after: details }, tx);
      return;
    }
    switch (move.kind) {
      case 'refund':
        if (payment) await parts.refunds.refundRecorded(tx, actor, payment, move);
        return;
      case 'transfer':
        if (payment) await parts.transfers.transferMade(tx, actor, payment, move, outcome.processorId);
        return;
      case 'reversal':
        if (payment) await parts.transfers.reversalRecorded(tx, actor, payment, move);
        return;
      case 'payout':
        await parts.payouts.payoutMade(tx, actor, move, outcome.processorId);
        return;
    }
  }

  const mover = createMoneyMover({
    db,
    leaseMs: opts.leaseMs,
    log: ctx.log,
    call: callProcessor,
    find: findAtProcessor,
    settled: moveSettled,
    afterSettled: () => ctx.deliverBuiltinEvents(),
  });

  /** Moves committed by a transaction that is not ours (the outbox consumer's): driven once it has ended. */
  let kickTimer: NodeJS.Timeout | undefined;

  return {
    execute: mover.execute,
    drain: mover.drain,

    kick(): void {
      if (kickTimer) return;
      kickTimer = setTimeout(() => {
        kickTimer = undefined;
        mover.drain().catch((error: unknown) => ctx.log?.warn({ err: error }, 'money moves failed'));
      }, 50);
      kickTimer.unref();
    },

    /** Resolves once the moves being driven now have settled (closing). */
    async idle(): Promise<void> {
      if (kickTimer) clearTimeout(kickTimer);
      kickTimer = undefined;
      await mover.idle();
    },
  };
}

export type MoneyMoves = ReturnType<typeof createMoneyMoves>;
