import { withTransaction } from '@repo/db';
import { pageMeta, pageOffset } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { PaymentProcessor } from '../../integrations/payments/index.js';
import * as ledger from './ledger.repository.js';
import * as moves from './money-moves.repository.js';
import * as repo from './reconciliation.repository.js';
import type { Difference } from './reconciliation.repository.js';

/** How many payments (and accounts) one read of the database takes. */
const PAGE = 200;
/** A share still held this long after its appointment completed, with nothing holding it, is stranded. */
const STRANDED_AFTER_MS = 15 * 60_000;

export interface ReconciliationReport {
  ranAt: Date;
  payments: number;
  accounts: number;
  /** Objects the processor could not be asked about in this run (checked again next run). */
  unreachable: number;
  differences: Difference[];
  open: number;
}

/**
 * Reconciliation (DESIGN.md §11): compares, for every paid payment, what the ledger says moved with
 * what the processor says it did (the intent's amount and status, its refunds, the transfers of its
 * group and their reversals) and, for every connected account, the payouts; also checks the ledger
 * itself (every group balanced) and looks for stranded shares. Each difference is kept until a run no
 * longer finds it. Money moves on their way are not differences: the processor may be ahead of us.
 */
export function createReconciliation(deps: { db: DbTx; processor: PaymentProcessor; now?: () => Date; log?: { warn(obj: object, msg: string): void } }) {
  const { db, processor } = deps;
  const now = deps.now ?? (() => new Date());

  async function checkPayments(found: Difference[]): Promise<{ checked: number; unreachable: number }> {
    let checked = 0;
    let unreachable = 0;
    for (let after = 0; ; ) {
      const page = await repo.paidPaymentsAfter(db, after, PAGE);
      if (page.length === 0) break;
      after = page[page.length - 1]!.payment.id;
      const totals = await ledger.movementTotals(
        db,
        page.map((r) => r.payment.id),
      );
      for (const { payment, transfer, appointmentStatus } of page) {
        checked += 1;
        const mine = totals.get(payment.id) ?? { charged: 0, refunded: 0, transferred: 0, reversed: 0, held: 0 };
        const p = { paymentId: payment.id, prestataireId: payment.prestataireId };
        const live = await moves.movesOfPayment(db, payment.id);
        const inFlight = (kind: string) => live.some((m) => m.kind === kind && ['pending', 'executing', 'retrying'].includes(m.status));
        if (mine.charged !== payment.amountCents) {
          found.push({ key: `payment:${payment.id}:charge`, kind: 'ledger_charge', ...p, expectedCents: payment.amountCents, actualCents: mine.charged, detail: 'The ledger does not hold the charge of this paid payment' });
        }
        if (mine.refunded !== payment.refundedCents) {
          found.push({ key: `payment:${payment.id}:ledger_refunds`, kind: 'ledger_refunds', ...p, expectedCents: payment.refundedCents, actualCents: mine.refunded, detail: "The ledger's refunds differ from the payment's refunded amount" });
        }
        try {
          const intent = await processor.retrievePaymentIntent(payment.intentId);
          if (intent.status !== 'succeeded' || intent.amountCents !== payment.amountCents) {
            found.push({ key: `payment:${payment.id}:intent`, kind: 'intent', ...p, expectedCents: payment.amountCents, actualCents: intent.amountCents, detail: `The processor's intent is ${intent.status} for ${intent.amountCents}` });
          }
          if (!inFlight('refund')) {
            const refunds = (await processor.listRefunds(payment.intentId)).filter((r) => r.status === 'succeeded' || r.status === 'pending');
            const atProcessor = refunds.reduce((s, r) => s + r.amountCents, 0);
            if (atProcessor !== mine.refunded) {
              found.push({ key: `payment:${payment.id}:refunds`, kind: 'refunds', ...p, expectedCents: mine.refunded, actualCents: atProcessor, detail: `The processor refunded ${atProcessor} in ${refunds.length} refund(s); the ledger ${mine.refunded}` });
            }
          }
          if (!inFlight('transfer') && !inFlight('reversal')) {
            const transfers = await processor.listTransfers(`appointment_${payment.appointmentId}`);
            const sent = transfers.reduce((s, t) => s + t.amountCents, 0);
            const reversed = transfers.reduce((s, t) => s + t.reversedCents, 0);
            if (sent !== mine.transferred) {
              found.push({ key: `payment:${payment.id}:transfers`, kind: 'transfers', ...p, expectedCents: mine.transferred, actualCents: sent, detail: `The processor transferred ${sent} in ${transfers.length} transfer(s); the ledger ${mine.transferred}` });
            }
            if (reversed !== mine.reversed) {
              found.push({ key: `payment:${payment.id}:reversals`, kind: 'reversals', ...p, expectedCents: mine.reversed, actualCents: reversed, detail: `The processor reversed ${reversed}; the ledger ${mine.reversed}` });
            }
          }
        } catch (error) {
          unreachable += 1;
          deps.log?.warn({ err: error, payment_id: payment.id }, 'reconciliation: the processor could not be read for a payment');
        }
        // A completed appointment whose share is neither held for a reason nor on its way, yet not all sent.
        const waiting = transfer?.status === 'held' || inFlight('transfer');
        const since = transfer?.updatedAt ?? payment.updatedAt;
        if (appointmentStatus === 'completed' && !waiting && mine.held > 0 && now().getTime() - since.getTime() > STRANDED_AFTER_MS) {
          found.push({ key: `payment:${payment.id}:stranded`, kind: 'stranded_share', ...p, expectedCents: 0, actualCents: mine.held, detail: "The prestataire's share stays at the platform with nothing holding it" });
        }
      }
    }
    return { checked, unreachable };
  }

  async function checkAccounts(found: Difference[]): Promise<{ checked: number; unreachable: number }> {
    let checked = 0;
    let unreachable = 0;
    for (let after = 0; ; ) {
      const page = await repo.connectedAccountsAfter(db, after, PAGE);
      if (page.length === 0) break;
      after = page[page.length - 1]!.prestataireId;
      for (const account of page) {
        checked += 1;
        if ((await moves.livePayoutsOf(db, account.prestataireId)).length > 0) continue;
        try {
          const payouts = (await processor.listPayouts(account.accountId)).filter((p) => p.status !== 'failed' && p.status !== 'canceled');
          const atProcessor = payouts.reduce((s, p) => s + p.amountCents, 0);
          const mine = await ledger.paidOutOf(db, account.prestataireId);
          if (atProcessor !== mine) {
            found.push({ key: `prestataire:${account.prestataireId}:payouts`, kind: 'payouts', prestataireId: account.prestataireId, expectedCents: mine, actualCents: atProcessor, detail: `The processor paid out ${atProcessor} in ${payouts.length} payout(s); the ledger ${mine}` });
          }
        } catch (error) {
          unreachable += 1;
          deps.log?.warn({ err: error, prestataire_id: account.prestataireId }, 'reconciliation: the processor could not be read for an account');
        }
      }
    }
    return { checked, unreachable };
  }

  return {
    /** One run: every paid payment and connected account against the processor; differences recorded. */
    async run(): Promise<ReconciliationReport> {
      const ranAt = now();
      const found: Difference[] = [];
      for (const u of await ledger.unbalancedTransactions(db)) {
        found.push({ key: `ledger:${u.transactionId}`, kind: 'unbalanced', expectedCents: 0, actualCents: u.sum, detail: `The entries of ${u.transactionId} do not sum to zero` });
      }
      const paymentsChecked = await checkPayments(found);
      const accountsChecked = await checkAccounts(found);
      const open = await withTransaction(db, (tx) => repo.recordRun(tx, found));
      return { ranAt, payments: paymentsChecked.checked, accounts: accountsChecked.checked, unreachable: paymentsChecked.unreachable + accountsChecked.unreachable, differences: found, open };
    },

    /** The differences still open, oldest first. */
    async list(query: { page: number; per_page: number }) {
      const { rows, total } = await repo.listOpen(db, query.per_page, pageOffset(query.page, query.per_page));
      return { rows, meta: pageMeta(query.page, query.per_page, total) };
    },

    countOpen: () => repo.countOpen(db),
  };
}

export type Reconciliation = ReturnType<typeof createReconciliation>;
