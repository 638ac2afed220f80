import { withTransaction } from '@repo/db';
import type { DbTx } from '../../db/index.js';
import type { ConnectedAccount, MoneyMove, Payment, PaymentTransfer } from '../../db/schema/index.js';
import type { Caller } from '../../lib/context.js';
import { transition } from '../../lib/transitions.js';
import * as accounts from './accounts.repository.js';
import { transferable } from './commission.js';
import * as ledger from './ledger.repository.js';
import { ledgerAccounts as acct } from './ledger.repository.js';
import * as moves from './money-moves.repository.js';
import { logged, moveDeps, moveIfFrom, PAID, WAITING_FOR_ACCOUNT, type PaymentsContext } from './payments.context.js';
import * as repo from './payments.repository.js';
import * as transfers from './transfers.repository.js';

/**
 * Transfers (DESIGN.md §6): when an appointment completes, the prestataire's share of its payment
 * goes to its connected account (`transfer_group` = the appointment), or waits, held: a dispute, a
 * hold from a conversation, no connected account yet, an account that cannot receive transfers yet.
 * Refunds after the transfer take their proportion back (reversals). The transfer's states move
 * through `transferMachine`; the processor is called after the transaction, by the money moves.
 */
export function createTransfersService(ctx: PaymentsContext) {
  const { db } = ctx;

  /** Why the share of a payment must wait now; null when it may go. */
  async function holdReasonOf(tx: DbTx, payment: Payment, account: ConnectedAccount | undefined, existing: PaymentTransfer | undefined): Promise<string | null> {
    // A dispute reported in the appointment's conversation holds the share until it is resolved,
    // whether it was reported before or after the payment.
    const disputed = !payment.holdReason && (await transfers.hasOpenConversationDispute(tx, payment.appointmentId));
    const refused = existing?.holdReason === 'transfer_refused';
    const waitingReason = !account ? 'no_connected_account' : !account.transfersEnabled ? (refused ? 'transfer_refused' : 'account_not_ready') : null;
    return payment.holdReason ?? (disputed ? 'conversation_dispute' : waitingReason);
  }

  /** The share waits: a first transfer row held, or a held one whose amount or reason changed. */
  async function hold(tx: DbTx, actor: Caller, payment: Payment, existing: PaymentTransfer | undefined, amount: number, holdReason: string) {
    if (existing) {
      const { row } = await transition(tx, moveDeps(ctx, actor), transfers.transferMachine, payment.id, {
        verb: 'hold',
        from: ['held'],
        to: 'held',
        action: 'payment.transfer_held',
        set: () => ({ amountCents: amount, holdReason, transferId: null }),
      });
      return row;
    }
    const row = await transfers.insertTransfer(tx, { ...transferBase(payment), amountCents: amount, status: 'held', holdReason });
    const subject = { type: 'payment', id: payment.id };
    const audit = transfers.transferAudit(row);
    await ctx.recorder.record(actor, 'payment.transfer_held', subject, { after: audit }, tx);
    await ctx.outbox.publish(actor, { type: 'payment.transfer_held', subject, payload: { from: null, to: 'held', ...audit } }, tx);
    return row;
  }

  /** The share goes: its row `sending`, and its money move committed (a refused one tried again as its next attempt). */
  async function send(tx: DbTx, actor: Caller, payment: Payment, existing: PaymentTransfer | undefined, amount: number, accountId: string) {
    const sending = { amountCents: amount, holdReason: null, transferId: null, reversedCents: 0 };
    const row = existing
      ? (
          await transition(tx, moveDeps(ctx, actor), transfers.transferMachine, payment.id, {
            verb: 'send',
            from: ['held'],
            to: 'sending',
            action: 'payment.transfer_released',
            set: () => sending,
          })
        ).row
      : await transfers.insertTransfer(tx, { ...transferBase(payment), ...sending, status: 'sending' });
    // One transfer move per payment: a refused one is tried again as its next attempt (a new key),
    // with the amount due now.
    const origin = `transfer:${payment.id}`;
    const previous = await moves.findMoveByOrigin(tx, origin, { lock: true });
    if (previous?.status === 'failed') await moves.retryMove(tx, previous.id, { amountCents: amount, target: accountId });
    else if (!previous) {
      await moves.insertMove(tx, {
        kind: 'transfer',
        paymentId: payment.id,
        prestataireId: payment.prestataireId,
        amountCents: amount,
        currency: payment.currency,
        target: accountId,
        origin,
      });
    }
    ctx.kick();
    return row;
  }

  /**
   * Sends the prestataire's share of a completed appointment's locked payment to its connected
   * account, or holds it. Sending commits a transfer move; the processor is called after the
   * transaction, by the caller or the worker.
   */
  async function transferFor(tx: DbTx, actor: Caller, payment: Payment): Promise<PaymentTransfer | undefined> {
    if (!PAID.includes(payment.status)) return undefined;
    const existing = await transfers.findTransferByPayment(tx, payment.id);
    if (existing && existing.status !== 'held') return existing;
    const amount = transferable(payment, await moves.liveAmountOf(tx, payment.id, 'refund'));
    const account = await accounts.findConnectedAccount(tx, payment.prestataireId);
    const holdReason = await holdReasonOf(tx, payment, account, existing);
    if (holdReason) {
      if (existing?.holdReason === holdReason && existing.amountCents === amount) return existing;
      return hold(tx, actor, payment, existing, amount, holdReason);
    }
    if (amount <= 0) return existing;
    return send(tx, actor, payment, existing, amount, account!.accountId);
  }

  /** After a refund: a transfer already made gives back the same proportion of the share (a reversal move). */
  async function reverseInProportion(tx: DbTx, payment: Payment): Promise<void> {
    const transfer = await transfers.findTransferByPayment(tx, payment.id);
    if (!transfer) return;
    if (transfer.status === 'held') {
      // Not sent yet: what will be sent shrinks instead.
      await transfers.updateHeldTransfer(tx, transfer.id, { amountCents: transferable(payment, await moves.liveAmountOf(tx, payment.id, 'refund')) });
      return;
    }
    // Being sent: the reversal is asked once the transfer is made (transferMade).
    if (!transfer.transferId) return;
    // What the prestataire keeps must come down to its share of what was not refunded: the transfer
    // may have been made after earlier refunds, already smaller.
    const inFlight = await moves.liveAmountOf(tx, payment.id, 'reversal');
    const delta = transfer.amountCents - transfer.reversedCents - inFlight - Math.max(0, transferable(payment));
    if (delta <= 0) return;
    const target = transfer.reversedCents + inFlight + delta;
    await moves.insertMove(tx, {
      kind: 'reversal',
      paymentId: payment.id,
      prestataireId: payment.prestataireId,
      amountCents: delta,
      currency: payment.currency,
      target: transfer.transferId,
      // The total reversed once it is done names it: the same refund seen twice asks once.
      origin: `reversal:${payment.id}:${target}`,
    });
    ctx.kick();
  }

  /** The transfer of a payment whose appointment has completed, if it has. */
  async function transferIfCompleted(tx: DbTx, actor: Caller, payment: Payment) {
    const appointment = await repo.findAppointment(tx, payment.appointmentId);
    if (appointment?.status === 'completed') await transferFor(tx, actor, payment);
  }

  /** Shares that waited for the prestataire's account: sent now that it can receive transfers. */
  async function releaseWaitingShares(tx: DbTx, actor: Caller, prestataireId: number): Promise<number> {
    let released = 0;
    for (const reason of WAITING_FOR_ACCOUNT) {
      for (const held of await transfers.heldTransfersOf(tx, prestataireId, reason)) {
        const payment = await repo.findPayment(tx, held.paymentId, { lock: true });
        if (!payment) continue;
        const after = await transferFor(tx, actor, payment);
        if (after?.status === 'sending') released += 1;
      }
    }
    return released;
  }

  /** A reversal the processor made: the transfer's reversed total and the ledger (the share back from the account). */
  async function reversalRecorded(tx: DbTx, actor: Caller, payment: Payment, move: MoneyMove): Promise<void> {
    const transfer = await transfers.findTransferByPayment(tx, payment.id);
    if (!transfer) return;
    const total = Math.min(transfer.amountCents, transfer.reversedCents + move.amountCents);
    await moveIfFrom(tx, moveDeps(ctx, actor), transfers.transferMachine, payment.id, transfer.status, {
      verb: 'reverse',
      from: ['paid', 'partially_reversed'],
      to: total >= transfer.amountCents ? 'reversed' : 'partially_reversed',
      action: 'payment.transfer_reversed',
      set: () => ({ reversedCents: total }),
      details: { transfer_id: transfer.transferId, reversed_cents: move.amountCents, total_reversed_cents: total },
    });
    await ledger.postBetween(tx, {
      transactionId: `reversal:${move.id}`,
      kind: 'reversal',
      paymentId: payment.id,
      prestataireId: payment.prestataireId,
      moveId: move.id,
      currency: move.currency,
      from: acct.payable(payment.prestataireId),
      to: acct.held(payment.prestataireId),
      amountCents: move.amountCents,
    });
  }

  /** The transfer move succeeded: the transfer is paid, the ledger moves the share, and refunds made meanwhile are reversed. */
  async function transferMade(tx: DbTx, actor: Caller, payment: Payment, move: MoneyMove, processorId: string): Promise<void> {
    const transfer = await transfers.findTransferByPayment(tx, payment.id);
    if (!transfer) return;
    await moveIfFrom(tx, moveDeps(ctx, actor), transfers.transferMachine, payment.id, transfer.status, {
      verb: 'record the transfer of',
      from: ['sending'],
      to: 'paid',
      action: 'payment.transferred',
      set: () => ({ holdReason: null, transferId: processorId, amountCents: move.amountCents, reversedCents: 0 }),
    });
    await ledger.postBetween(tx, {
      transactionId: `transfer:${move.id}`,
      kind: 'transfer',
      paymentId: payment.id,
      prestataireId: payment.prestataireId,
      moveId: move.id,
      currency: move.currency,
      from: acct.held(payment.prestataireId),
      to: acct.payable(payment.prestataireId),
      amountCents: move.amountCents,
    });
    // Refunds made while it was on its way take their proportion back now.
    await reverseInProportion(tx, payment);
  }

  /**
   * The processor refused the transfer (an account not yet able to receive transfers): the share
   * waits, and goes out as the move's next attempt when the account's capabilities change
   * (account.updated, or the worker's re-read).
   */
  async function transferRefused(tx: DbTx, actor: Caller, payment: Payment, details: Record<string, unknown>): Promise<void> {
    const transfer = await transfers.findTransferByPayment(tx, payment.id);
    const moved =
      transfer &&
      (await moveIfFrom(tx, moveDeps(ctx, actor), transfers.transferMachine, payment.id, transfer.status, {
        verb: 'refuse',
        from: ['sending'],
        to: 'held',
        action: 'payment.transfer_refused',
        set: () => ({ holdReason: 'transfer_refused' }),
        details,
      }));
    if (!moved) await ctx.recorder.record(actor, 'payment.transfer_refused', { type: 'payment', id: payment.id }, { after: details }, tx);
  }

  return {
    transferFor,
    reverseInProportion,
    transferIfCompleted,
    releaseWaitingShares,
    reversalRecorded,
    transferMade,
    transferRefused,

    /** The appointment completed: its prestataire's share goes out (or waits, held). */
    async onAppointmentCompleted(tx: DbTx, actor: Caller, appointmentId: number): Promise<void> {
      const payment = await repo.findPaymentByAppointment(tx, appointmentId, { lock: true });
      if (payment) await transferFor(tx, actor, payment);
    },

    /**
     * Holds the transfer of an appointment's payment (a conversation's dispute opened); false when the
     * appointment has no payment, or its transfer is already made.
     */
    async holdTransfer(actor: Caller, appointmentId: number, reason: string, tx?: DbTx): Promise<boolean> {
      return withTransaction(tx ?? db, async (t) => {
        const payment = await repo.findPaymentByAppointment(t, appointmentId, { lock: true });
        if (!payment) return false;
        const transfer = await transfers.findTransferByPayment(t, payment.id);
        if (transfer && transfer.status !== 'held') return false;
        const moved = await repo.updatePayment(t, payment.id, { holdReason: reason.slice(0, 200) });
        if (transfer) await transfers.updateHeldTransfer(t, transfer.id, { holdReason: moved.holdReason });
        await logged(ctx, t, actor, 'payment.transfer_hold_set', payment, moved);
        return true;
      });
    },

    /** Lifts a hold (the conversation's dispute resolved); a completed appointment's share then goes out. */
    async releaseTransfer(actor: Caller, appointmentId: number, tx?: DbTx): Promise<boolean> {
      return withTransaction(tx ?? db, async (t) => {
        const payment = await repo.findPaymentByAppointment(t, appointmentId, { lock: true });
        if (!payment) return false;
        if (!payment.holdReason) {
          // Held when the appointment completed, the dispute being open then: the share goes out now.
          const transfer = await transfers.findTransferByPayment(t, payment.id);
          if (transfer?.status !== 'held' || transfer.holdReason !== 'conversation_dispute') return false;
          await transferIfCompleted(t, actor, payment);
          return true;
        }
        // A card dispute is lifted by the processor alone (charge.dispute.closed).
        const holdReason = payment.disputeStatus === 'open' ? 'dispute' : null;
        const moved = await repo.updatePayment(t, payment.id, { holdReason });
        await logged(ctx, t, actor, 'payment.transfer_hold_released', payment, moved);
        await transferIfCompleted(t, actor, moved);
        return true;
      });
    },

    /** The card holder disputes the charge (`charge.dispute.created`): the share waits until it is closed. */
    async disputeOpened(tx: DbTx, actor: Caller, payment: Payment, disputeId: string | null): Promise<void> {
      if (payment.disputeStatus === 'open') return;
      const moved = await repo.updatePayment(tx, payment.id, { disputeStatus: 'open', holdReason: 'dispute' });
      await logged(ctx, tx, actor, 'payment.dispute_opened', payment, moved, { dispute_id: disputeId });
    },

    /** The dispute is closed (`charge.dispute.closed`): its hold is lifted, and a completed appointment's share goes out. */
    async disputeClosed(tx: DbTx, actor: Caller, payment: Payment, details: { dispute_id: string | null; outcome: string | null }): Promise<void> {
      if (payment.disputeStatus === 'closed') return;
      const moved = await repo.updatePayment(tx, payment.id, {
        disputeStatus: 'closed',
        holdReason: payment.holdReason === 'dispute' ? null : payment.holdReason,
      });
      await logged(ctx, tx, actor, 'payment.dispute_closed', payment, moved, details);
      await transferIfCompleted(tx, actor, moved);
    },
  };
}

/** What a payment's transfer row is made of, whatever its state. */
function transferBase(payment: Payment) {
  return {
    paymentId: payment.id,
    appointmentId: payment.appointmentId,
    prestataireId: payment.prestataireId,
    transferGroup: `appointment_${payment.appointmentId}`,
  };
}

export type TransfersService = ReturnType<typeof createTransfersService>;
