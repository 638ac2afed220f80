import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { MoneyMove, Payment } from '../../db/schema/index.js';
import type { Actor, Caller } from '../../lib/context.js';
import { illegalMove } from '../../lib/transitions.js';
import * as ledger from './ledger.repository.js';
import { ledgerAccounts as acct } from './ledger.repository.js';
import * as moves from './money-moves.repository.js';
import { moveDeps, moveIfFrom, REFUNDABLE, type PaymentsContext } from './payments.context.js';
import * as repo from './payments.repository.js';
import { shareFor, shareReversedFor } from './commission.js';
import type { TransfersService } from './transfers.service.js';

type Refunded = { payment: Payment; move: MoneyMove; done: boolean };

/**
 * Refunds (DESIGN.md §6, §11): an administrator refunds all or part of a paid payment, or a
 * dispute's resolution does. Each refund is a money move committed first, made at the processor
 * with no transaction open, and recorded by its answer: the payment moves to `partially_refunded`
 * or `refunded` (`paymentMachine`), the ledger takes the refund back from the fee and the share in
 * proportion, and a transfer already made gives back its part (a reversal).
 */
export function createRefundsService(ctx: PaymentsContext, parts: { transfers: TransfersService }) {
  const { db } = ctx;

  /** A refund the processor made, of a payment the caller holds locked. */
  async function refundRecorded(tx: DbTx, actor: Caller, payment: Payment, move: MoneyMove): Promise<Payment> {
    const before = payment.refundedCents;
    const total = Math.min(payment.amountCents, before + move.amountCents);
    const status = total >= payment.amountCents ? 'refunded' : 'partially_refunded';
    const moved = await moveIfFrom(tx, moveDeps(ctx, actor), repo.paymentMachine, payment.id, payment.status, {
      verb: 'refund',
      from: REFUNDABLE,
      to: status,
      action: `payment.${status}`,
      set: () => ({ refundedCents: total, refundedAt: ctx.now() }),
      details: { refund_cents: total - before, reason: move.reason, refund_id: move.processorId },
    });
    if (!moved) return payment;
    const share = shareFor(payment.amountCents, payment.commissionCents);
    const shareBack = shareReversedFor(share, payment.amountCents, total) - shareReversedFor(share, payment.amountCents, before);
    await ledger.post(tx, {
      transactionId: `refund:${move.id}`,
      kind: 'refund',
      paymentId: payment.id,
      prestataireId: payment.prestataireId,
      moveId: move.id,
      currency: payment.currency,
      entries: [
        { account: acct.refunds, amountCents: move.amountCents },
        { account: acct.fees, amountCents: -(move.amountCents - shareBack) },
        { account: acct.held(payment.prestataireId), amountCents: -shareBack },
      ],
    });
    await parts.transfers.reverseInProportion(tx, moved);
    return moved;
  }

  /** Commits a refund move of a locked payment once its checks pass. */
  async function requestRefund(tx: DbTx, actor: Actor, payment: Payment, amountCents: number | undefined, reason: string, origin: string | null): Promise<MoneyMove> {
    if (origin) {
      const asked = await moves.findMoveByOrigin(tx, origin);
      if (asked) return asked;
    }
    if (!REFUNDABLE.includes(payment.status)) throw illegalMove(repo.paymentMachine, 'refund', payment.status, REFUNDABLE);
    // One refund of a payment at a time: what is left to refund is known only once the last is answered.
    const live = await moves.liveMovesOf(tx, payment.id, 'refund');
    if (live.length > 0) {
      throw new AppError('conflict', `A refund of this payment is on its way (${live[0]!.amountCents} cents); try again once it is done`, {
        extra: { current_status: 'refund_in_progress' },
      });
    }
    const remaining = payment.amountCents - payment.refundedCents;
    const amount = amountCents ?? remaining;
    if (amount > remaining) throw AppError.validation({ amount_cents: [`Must not exceed the amount not yet refunded (${remaining})`] });
    const { move } = await moves.insertMove(tx, {
      kind: 'refund',
      paymentId: payment.id,
      prestataireId: payment.prestataireId,
      amountCents: amount,
      currency: payment.currency,
      reason: reason.slice(0, 500),
      origin,
      requestedBy: actor.userId,
    });
    await ctx.recorder.record(actor, 'payment.refund_requested', { type: 'payment', id: payment.id }, { after: { move_id: move.id, amount_cents: amount, reason: move.reason } }, tx);
    return move;
  }

  /** Runs a refund a request committed, and answers what became of it (502 when the processor refused). */
  async function runRequested(requested: MoneyMove): Promise<Refunded> {
    const move = (await ctx.execute(requested.id)) ?? requested;
    const payment = (await repo.findPayment(db, move.paymentId!))!;
    if (move.status === 'failed') throw new AppError('bad_gateway', `The payment processor refused the refund: ${move.failureReason ?? 'refused'}`);
    // The reversal the refund asked of a share already sent is made now too (else by the worker).
    if (move.status === 'succeeded') for (const reversal of await moves.liveMovesOf(db, payment.id, 'reversal')) await ctx.execute(reversal.id);
    return { payment, move, done: move.status === 'succeeded' };
  }

  return {
    refundRecorded,

    /**
     * Refunds all or part of a paid payment; after completion the transfer gives back its proportion.
     * The refund is committed as a money move, then made at the processor with no transaction open:
     * `done` says whether the processor answered in time (else the worker finishes it, 202). A
     * refund the processor refuses answers 502 and changes nothing; a second refund while one is on
     * its way answers 409 at once.
     */
    async refund(actor: Actor, paymentId: number, input: { amount_cents?: number; reason: string }): Promise<Refunded> {
      const move = await withTransaction(db, async (tx) => {
        const payment = await repo.findPayment(tx, paymentId, { lock: true });
        if (!payment) throw AppError.notFound('Payment');
        return requestRefund(tx, actor, payment, input.amount_cents, input.reason, null);
      });
      return runRequested(move);
    },

    /**
     * The refund an administrator decided when resolving the dispute of a conversation about
     * `appointmentId`, committed in the resolution's own transaction (`tx`) with the conversation as
     * its origin, so that resolving twice cannot refund twice. The caller runs it (`runMove`) once
     * its transaction has committed. 422 on `refund_cents` when there is nothing to refund.
     */
    async requestDisputeRefund(tx: DbTx, actor: Actor, input: { appointmentId: number; conversationId: number; amountCents: number; reason: string }): Promise<number> {
      const payment = await repo.findPaymentByAppointment(tx, input.appointmentId, { lock: true });
      if (!payment) throw AppError.validation({ refund_cents: ['The appointment has no payment to refund'] });
      try {
        const move = await requestRefund(tx, actor, payment, input.amountCents, input.reason, `dispute:${input.conversationId}`);
        return move.id;
      } catch (error) {
        // The refund's own fields are the resolution's refund_cents.
        if (error instanceof AppError && error.statusCode === 422) throw AppError.validation({ refund_cents: Object.values(error.errors ?? {}).flat() });
        if (error instanceof AppError && error.statusCode === 409) {
          throw AppError.validation({ refund_cents: [error.message] });
        }
        throw error;
      }
    },

    /**
     * The processor says the charge of a locked payment is refunded up to `amountRefunded`. Our own
     * refunds are recorded by their moves (this may come before the answer to the call that made one,
     * or instead of it): those on their way are hurried. Only what no move accounts for was refunded
     * elsewhere (the processor's dashboard), and is recorded as a move already made.
     */
    async chargeRefunded(tx: DbTx, actor: Caller, payment: Payment, amountRefunded: number): Promise<void> {
      if (!REFUNDABLE.includes(payment.status) && payment.status !== 'refunded') return;
      const inFlight = await moves.liveAmountOf(tx, payment.id, 'refund');
      const outside = Math.min(payment.amountCents - payment.refundedCents - inFlight, amountRefunded - payment.refundedCents - inFlight);
      if (inFlight > 0) {
        await moves.hurryMoves(tx, payment.id, 'refund');
        ctx.kick();
      }
      if (outside <= 0) return;
      const move = await moves.insertSettledMove(tx, {
        kind: 'refund',
        paymentId: payment.id,
        prestataireId: payment.prestataireId,
        amountCents: outside,
        currency: payment.currency,
        reason: 'Refunded at the processor',
        origin: `processor-refund:${payment.id}:${payment.refundedCents + inFlight + outside}`,
      });
      if (move) await refundRecorded(tx, actor, payment, move);
    },
  };
}

export type RefundsService = ReturnType<typeof createRefundsService>;
