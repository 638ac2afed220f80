import { createAccountsService } from './accounts.service.js';
import { createChargesService } from './charges.service.js';
import { createCommissionService } from './commission.service.js';
import { createInvoicesService } from './invoices.service.js';
import { createMoneyMoves } from './money-moves.service.js';
import { guarded, type PaymentsContext, type PaymentsDeps } from './payments.context.js';
import { createPayoutsService } from './payouts.service.js';
import { createRefundsService } from './refunds.service.js';
import { createPaymentReports } from './reports.service.js';
import { createTransfersService } from './transfers.service.js';
import { createWebhookEvents } from './webhook-events.service.js';

/**
 * Payments, transfers, refunds and payouts (DESIGN.md §6, §11), built once per app: one money-moves
 * worker and one set of built-in deliveries serve the routes, the outbox consumer, the conversations'
 * dispute refunds and the jobs, which all take this one entry. The processor's webhook is the source
 * of truth of a payment's state; every change of money state is logged and published through the
 * outbox by the transaction that makes it.
 */
export function createPaymentsService(deps: PaymentsDeps) {
  // Three calls of the context are bound to parts made after it: the money moves settle their answers
  // through the parts, the parts commit moves for them, and the built-in processor's deliveries go
  // through the webhook as Stripe's do. Nothing calls them before this function returns.
  const ctx: PaymentsContext = {
    db: deps.db,
    recorder: deps.recorder,
    outbox: deps.outbox,
    config: deps.config,
    processor: guarded(deps.processor),
    raw: deps.processor,
    now: deps.now ?? (() => new Date()),
    log: deps.log,
    kick: () => moves.kick(),
    execute: (id) => moves.execute(id),
    deliverBuiltinEvents: (events) => webhooks.deliverBuiltinEvents(events),
  };
  const commission = createCommissionService(ctx);
  const invoices = createInvoicesService(ctx);
  const charges = createChargesService(ctx, { commission, invoices });
  const transfers = createTransfersService(ctx);
  const refunds = createRefundsService(ctx, { transfers });
  const accounts = createAccountsService(ctx, { transfers });
  const payouts = createPayoutsService(ctx);
  const reports = createPaymentReports(ctx);
  const moves = createMoneyMoves(ctx, { refunds, transfers, payouts }, { leaseMs: deps.moveLeaseMs ?? 120_000 });
  const webhooks = createWebhookEvents(ctx, { charges, refunds, transfers, accounts, payouts });

  return {
    processorKind: charges.processorKind,

    // ---- paying, and the processor's word ---------------------------------------------------------
    initiate: charges.initiate,
    validate: charges.validate,
    receiveWebhook: webhooks.receiveWebhook,

    // ---- transfers (the outbox consumer: completion, a conversation's dispute) --------------------
    onAppointmentCompleted: transfers.onAppointmentCompleted,
    holdTransfer: transfers.holdTransfer,
    releaseTransfer: transfers.releaseTransfer,

    // ---- administration ---------------------------------------------------------------------------
    getCommissionSettings: commission.getCommissionSettings,
    updateCommissionSettings: commission.updateCommissionSettings,
    refund: refunds.refund,
    requestDisputeRefund: refunds.requestDisputeRefund,
    list: reports.list,
    stats: reports.stats,
    ledger: reports.ledger,
    moneyMoves: reports.moneyMoves,

    // ---- the money moves' worker ------------------------------------------------------------------
    /** Makes a committed money move at the processor now (the worker would otherwise). */
    runMove: moves.execute,
    /**
     * The worker's pass: every due money move (waiting, retrying, or left executing by a caller that
     * vanished), and, when asked (at most every `refreshMs`), a re-read of the accounts whose shares
     * wait for them (for an `account.updated` that never came).
     */
    async drainMoves(opts: { refreshAccounts?: boolean } = {}): Promise<number> {
      if (opts.refreshAccounts) await accounts.refreshWaitingAccounts();
      return moves.drain();
    },
    moveStats: reports.moveStats,
    idle: moves.idle,

    // ---- the parties --------------------------------------------------------------------------------
    history: reports.history,
    show: reports.show,
    invoice: invoices.invoice,

    // ---- the prestataire's account and payouts ------------------------------------------------------
    onboard: accounts.onboard,
    accountStatus: accounts.accountStatus,
    setIban: accounts.setIban,
    withdraw: payouts.withdraw,
    revenue: payouts.revenue,
  };
}

export type PaymentsService = ReturnType<typeof createPaymentsService>;
export type { PaymentsConfig } from './payments.context.js';
