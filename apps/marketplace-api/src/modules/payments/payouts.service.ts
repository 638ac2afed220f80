import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import { DateTime } from 'luxon';
import type { DbTx } from '../../db/index.js';
import type { MoneyMove, Payout } from '../../db/schema/index.js';
import type { Actor, Caller } from '../../lib/context.js';
import * as accounts from './accounts.repository.js';
import { notOnboarded } from './accounts.service.js';
import { transferable } from './commission.js';
import * as ledger from './ledger.repository.js';
import { ledgerAccounts as acct } from './ledger.repository.js';
import * as moves from './money-moves.repository.js';
import { moveDeps, moveIfFrom, type PaymentsContext } from './payments.context.js';
import * as repo from './payments.repository.js';
import * as payouts from './payouts.repository.js';

/**
 * Payouts (`retrait`, DESIGN.md §6): a prestataire withdraws its available balance from its
 * connected account (manual payout schedule) to its bank account. The payout is a money move
 * committed with its row; its state (`payoutMachine`) moves on the processor's refusal or the bank's
 * answer (`payout.paid`, `payout.failed`).
 */
export function createPayoutsService(ctx: PaymentsContext) {
  const { db, processor } = ctx;

  /** `pending` → `paid` | `failed` on the processor's word, once; a payout no longer pending is left as it is. */
  function settle(tx: DbTx, actor: Caller, payout: Payout, to: 'paid' | 'failed', failureReason: string | null, details: Record<string, unknown>) {
    return moveIfFrom(tx, moveDeps(ctx, actor), payouts.payoutMachine, payout.id, payout.status, {
      verb: to === 'paid' ? 'pay' : 'fail',
      from: ['pending'],
      to,
      action: `payout.${to}`,
      set: () => ({ failureReason }),
      details,
    });
  }

  return {
    /** The payout move succeeded: the processor's payout is recorded, and the ledger moves the money out. */
    async payoutMade(tx: DbTx, actor: Caller, move: MoneyMove, processorId: string): Promise<void> {
      const payout = await payouts.findPayoutByMove(tx, move.id);
      if (!payout) return;
      const row = await payouts.setProcessorPayout(tx, payout.id, processorId);
      await ledger.postBetween(tx, {
        transactionId: `payout:${payout.id}`,
        kind: 'payout',
        prestataireId: payout.prestataireId,
        moveId: move.id,
        currency: move.currency,
        from: acct.payable(payout.prestataireId),
        to: acct.paidOut(payout.prestataireId),
        amountCents: move.amountCents,
      });
      const details = { id: row.id, payout_id: row.payoutId, amount_cents: row.amountCents, status: row.status };
      await ctx.recorder.record(actor, 'payout.created', { type: 'payout', id: row.id }, { after: details }, tx);
      await ctx.outbox.publish(actor, { type: 'payout.created', subject: { type: 'payout', id: row.id }, payload: { ...details, prestataire_id: row.prestataireId } }, tx);
    },

    /** The processor refused the payout move: the payout failed, nothing left the account. */
    async payoutRefused(tx: DbTx, actor: Caller, move: MoneyMove, message: string, details: Record<string, unknown>): Promise<void> {
      const payout = await payouts.findPayoutByMove(tx, move.id);
      if (payout) await settle(tx, actor, payout, 'failed', message, details);
    },

    /** `payout.paid` or `payout.failed`: the bank's answer; a failed payout's money is back in the account's balance. */
    async payoutAnswered(tx: DbTx, actor: Caller, type: 'payout.paid' | 'payout.failed', object: Record<string, unknown>): Promise<void> {
      const payoutId = typeof object.id === 'string' && object.id.length > 0 ? object.id : null;
      const payout = payoutId ? await payouts.findPayoutByPayoutId(tx, payoutId) : undefined;
      if (!payout) return;
      const failed = type === 'payout.failed';
      const reason = failed ? ((typeof object.failure_message === 'string' && object.failure_message) || 'The payout failed') : null;
      const moved = await settle(tx, actor, payout, failed ? 'failed' : 'paid', reason, {});
      if (!moved || !failed) return;
      await ledger.postBetween(tx, {
        transactionId: `payout_failed:${payout.id}`,
        kind: 'payout_failed',
        prestataireId: payout.prestataireId,
        moveId: payout.moveId,
        currency: payout.currency,
        from: acct.paidOut(payout.prestataireId),
        to: acct.payable(payout.prestataireId),
        amountCents: payout.amountCents,
      });
    },

    /**
     * Pays out the whole available balance to the bank account (manual payout schedule): a payout
     * move committed with its row, then made at the processor. One payout at a time (409 while one is
     * on its way); the processor's refusal answers 502 with the payout marked failed.
     */
    async withdraw(actor: Actor) {
      const account = await accounts.findConnectedAccount(db, actor.userId);
      if (!account) throw notOnboarded();
      if (!account.bankAccountId) throw new AppError('conflict', 'Set a bank account first (PUT /prestataire/psp/iban)', { extra: { current_status: 'no_bank_account' } });
      const busy = () => new AppError('conflict', 'A payout is on its way; try again once it is done', { extra: { current_status: 'payout_in_progress' } });
      if ((await moves.livePayoutsOf(db, actor.userId)).length > 0) throw busy();
      const available = await processor.availableBalance(account.accountId, 'EUR');
      if (available <= 0) throw new AppError('conflict', 'No available balance to pay out', { extra: { current_status: 'no_available_balance' } });
      const payout = await withTransaction(db, async (tx) => {
        await accounts.lockOnboarding(tx, actor.userId);
        if ((await moves.livePayoutsOf(tx, actor.userId)).length > 0) throw busy();
        const { move } = await moves.insertMove(tx, {
          kind: 'payout',
          prestataireId: actor.userId,
          amountCents: available,
          currency: 'EUR',
          target: account.accountId,
          requestedBy: actor.userId,
        });
        const row = await payouts.insertPayout(tx, { prestataireId: actor.userId, accountId: account.accountId, moveId: move.id, amountCents: available });
        await ctx.recorder.record(actor, 'payout.requested', { type: 'payout', id: row.id }, { after: { id: row.id, amount_cents: available, move_id: move.id } }, tx);
        return row;
      });
      const move = await ctx.execute(payout.moveId!);
      const row = (await payouts.listPayouts(db, actor.userId)).find((p) => p.id === payout.id) ?? payout;
      if (move?.status === 'failed') throw new AppError('bad_gateway', `The payment processor refused the payout: ${move.failureReason ?? 'refused'}`);
      return row;
    },

    /** Gross, commission and net of the prestataire's paid payments, what was paid out and what is pending; by month. */
    async revenue(actor: Actor) {
      const rows = await repo.paidPaymentsOf(db, actor.userId);
      const payoutRows = await payouts.listPayouts(db, actor.userId);
      const months = new Map<string, { gross: number; commission: number; net: number }>();
      const totals = { gross: 0, commission: 0, net: 0, transferred: 0, held: 0 };
      for (const { payment, transfer } of rows) {
        const gross = payment.amountCents - payment.refundedCents;
        const net = transferable(payment);
        const month = DateTime.fromJSDate(payment.paidAt ?? payment.createdAt, { zone: ctx.config.timeZone }).toFormat('yyyy-MM');
        const m = months.get(month) ?? { gross: 0, commission: 0, net: 0 };
        m.gross += gross;
        m.net += net;
        m.commission += gross - net;
        months.set(month, m);
        totals.gross += gross;
        totals.net += net;
        totals.commission += gross - net;
        if (transfer && transfer.status !== 'held') totals.transferred += transfer.amountCents - transfer.reversedCents;
        else totals.held += net;
      }
      const paidOut = payoutRows.filter((p) => p.status === 'paid').reduce((s, p) => s + p.amountCents, 0);
      const pendingPayouts = payoutRows.filter((p) => p.status === 'pending').reduce((s, p) => s + p.amountCents, 0);
      return {
        currency: 'EUR',
        gross_cents: totals.gross,
        commission_cents: totals.commission,
        net_cents: totals.net,
        transferred_cents: totals.transferred,
        paid_out_cents: paidOut,
        // Earned but not yet in the bank: held shares, the balance not withdrawn, payouts on their way.
        pending_cents: totals.held + Math.max(0, totals.transferred - paidOut),
        pending_payouts_cents: pendingPayouts,
        by_month: [...months.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([month, m]) => ({ month, gross_cents: m.gross, commission_cents: m.commission, net_cents: m.net })),
        payouts: payoutRows,
      };
    },
  };
}

export type PayoutsService = ReturnType<typeof createPayoutsService>;
