import { withTransaction } from '@repo/db';
import { AppError, pageMeta, pageOffset } from '@repo/http';
import { randomUUID } from 'node:crypto';
import { DateTime } from 'luxon';
import type { DbTx } from '../../db/index.js';
import { PAID_PAYMENT_STATUSES, type MoneyMove, type Payment, type PaymentStatus, type PaymentTransfer } from '../../db/schema/index.js';
import {
  isBuiltin,
  WebhookSignatureError,
  type Intent,
  type PaymentProcessor,
  type ProcessorAccount,
  type ProcessorEvent,
} from '../../integrations/payments/index.js';
import { systemActor, type Actor, type Caller } from '../../lib/context.js';
import { addDays, isCalendarDate, startOfDayIn } from '../../lib/time.js';
import type { ActivityRecorder } from '../activity-log/index.js';
import type { Outbox } from '../outbox/index.js';
import { commissionFor, DEFAULT_COMMISSION, shareFor, shareReversedFor, type CommissionSettings } from './commission.js';
import { renderInvoicePdf } from './invoice-pdf.js';
import * as ledger from './ledger.repository.js';
import { ledgerAccounts as acct } from './ledger.repository.js';
import { createMoneyMover, type MoveOutcome } from './money-moves.js';
import * as moves from './money-moves.repository.js';
import * as repo from './payments.repository.js';

export interface PaymentsConfig {
  returnUrl: string;
  refreshUrl: string;
  vatPercent: number;
  /** The platform's zone: stats by day or month, invoice years. */
  timeZone: string;
}

/** The states a payment may be paid from (a declined card may be retried). */
const PAYABLE: readonly PaymentStatus[] = ['requires_payment', 'processing', 'failed'];
const PAID: readonly PaymentStatus[] = PAID_PAYMENT_STATUSES;
const REFUNDABLE: readonly PaymentStatus[] = ['succeeded', 'partially_refunded'];
/** Held shares that go out by themselves once the prestataire's account can receive transfers. */
const WAITING_FOR_ACCOUNT = ['no_connected_account', 'account_not_ready', 'transfer_refused'];

/** Whether an account may receive transfers (Stripe's `transfers` capability active). */
const transfersEnabledOf = (remote: ProcessorAccount): boolean => remote.transfersEnabled;

/** The same, from an `account.updated` event's object. */
function transfersEnabledIn(object: Record<string, unknown>): boolean {
  const capability = (object.capabilities as { transfers?: unknown } | undefined)?.transfers;
  return typeof capability === 'string' ? capability === 'active' : object.charges_enabled === true;
}


/** What the activity log keeps of a payment. */
function audit(p: Payment) {
  return {
    id: p.id,
    appointment_id: p.appointmentId,
    status: p.status,
    amount_cents: p.amountCents,
    commission_cents: p.commissionCents,
    refunded_cents: p.refundedCents,
    hold_reason: p.holdReason,
    dispute_status: p.disputeStatus,
  };
}

const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);
const int = (v: unknown): number | null => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null);

function settingsFrom(stored: unknown): CommissionSettings {
  if (stored && typeof stored === 'object') {
    const s = stored as Record<string, unknown>;
    const bp = int(s.percent_basis_points);
    const fixed = int(s.fixed_cents);
    const min = int(s.minimum_cents);
    if (bp !== null && fixed !== null && min !== null) return { percentBasisPoints: bp, fixedCents: fixed, minimumCents: min };
  }
  return DEFAULT_COMMISSION;
}

/** The IBAN check of ISO 13616: country, check digits, then mod 97 of the rearranged number is 1. */
export function isValidIban(iban: string): boolean {
  if (!/^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$/.test(iban)) return false;
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (const ch of rearranged) {
    const digits = /[A-Z]/.test(ch) ? String(ch.charCodeAt(0) - 55) : ch;
    for (const d of digits) remainder = (remainder * 10 + Number(d)) % 97;
  }
  return remainder === 1;
}

/**
 * The processor with its failures as 502: a declined call or an unreachable API is the processor's
 * answer, not a fault of ours (the transaction around the call rolls back).
 */
function guarded(processor: PaymentProcessor): PaymentProcessor {
  return new Proxy(processor, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function' || key === 'verifyWebhook' || key === 'takeEvents') return value;
      return async (...args: unknown[]) => {
        try {
          return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        } catch (error) {
          if (error instanceof AppError) throw error;
          const message = error instanceof Error ? error.message : 'unknown error';
          throw new AppError('bad_gateway', `The payment processor refused the operation: ${message}`, { cause: error });
        }
      };
    },
  });
}

/**
 * Payments, transfers, refunds and payouts (DESIGN.md §6). The processor's webhook is the source of
 * truth of a payment's state; every change of money state is logged and published through the
 * outbox by the transaction that makes it.
 */
export function createPaymentsService(deps: {
  db: DbTx;
  recorder: ActivityRecorder;
  outbox: Outbox;
  processor: PaymentProcessor;
  config: PaymentsConfig;
  now?: () => Date;
  /** How long a caller holds a money move: above the processor client's longest call with its retries. */
  moveLeaseMs?: number;
  log?: { warn(obj: object, msg: string): void };
}) {
  const { db, recorder, outbox, config } = deps;
  const processor = guarded(deps.processor);
  /** Money moves call the processor itself: their failures are sorted (money-moves.ts), not turned into 502. */
  const raw = deps.processor;
  const now = deps.now ?? (() => new Date());
  const mover = createMoneyMover({
    db,
    leaseMs: deps.moveLeaseMs ?? 120_000,
    log: deps.log,
    call: callProcessor,
    find: findAtProcessor,
    settled: moveSettled,
    afterSettled: () => deliverBuiltinEvents(),
  });
  /** Moves committed by a transaction that is not ours (the outbox consumer's): driven once it has ended. */
  let kickTimer: NodeJS.Timeout | undefined;
  function kick() {
    if (kickTimer) return;
    kickTimer = setTimeout(() => {
      kickTimer = undefined;
      mover.drain().catch((error: unknown) => deps.log?.warn({ err: error }, 'money moves failed'));
    }, 50);
    kickTimer.unref();
  }

  /** One money change: the activity log and the outbox, in the transaction that made it. */
  async function logged(tx: DbTx, actor: Caller, action: string, before: Payment | null, after: Payment, details: Record<string, unknown> = {}) {
    await recorder.record(actor, action, { type: 'payment', id: after.id }, { before: before && audit(before), after: { ...audit(after), ...details } }, tx);
    await outbox.publish(
      actor,
      { type: action, subject: { type: 'payment', id: after.id }, payload: { from: before?.status ?? null, to: after.status, ...audit(after), ...details } },
      tx,
    );
  }

  async function commissionSettings(tx?: DbTx): Promise<CommissionSettings> {
    return settingsFrom(await repo.readCommissionSettings(tx ?? db));
  }

  // ---- state moves of a payment -----------------------------------------------------------------

  /** The charge went through: commission fixed from the current settings, appointment paid, invoice issued. */
  async function markSucceeded(tx: DbTx, actor: Caller, payment: Payment, chargeId: string | null): Promise<Payment> {
    if (!PAYABLE.includes(payment.status)) {
      if (chargeId && !payment.chargeId) return repo.updatePayment(tx, payment.id, { chargeId });
      return payment;
    }
    const paidAt = now();
    const commission = commissionFor(payment.amountCents, await commissionSettings(tx));
    const moved = await repo.movePayment(tx, payment.id, PAYABLE, {
      status: 'succeeded',
      chargeId: chargeId ?? payment.chargeId,
      commissionCents: commission,
      failureReason: null,
      paidAt,
    });
    if (!moved) return payment;
    await repo.setAppointmentPaidAt(tx, payment.appointmentId, paidAt);
    const year = DateTime.fromJSDate(paidAt, { zone: config.timeZone }).year;
    const invoice = await repo.issueInvoice(tx, payment.id, year);
    await chargeRecorded(tx, moved);
    await logged(tx, actor, 'payment.succeeded', payment, moved, { invoice_number: invoice.number });
    return moved;
  }

  async function markProcessing(tx: DbTx, actor: Caller, payment: Payment): Promise<Payment> {
    const moved = await repo.movePayment(tx, payment.id, ['requires_payment', 'failed'], { status: 'processing', failureReason: null });
    if (!moved) return payment;
    await logged(tx, actor, 'payment.processing', payment, moved);
    return moved;
  }

  async function markFailed(tx: DbTx, actor: Caller, payment: Payment, reason: string): Promise<Payment> {
    const moved = await repo.movePayment(tx, payment.id, ['requires_payment', 'processing'], { status: 'failed', failureReason: reason.slice(0, 500) });
    if (!moved) return payment;
    await logged(tx, actor, 'payment.failed', payment, moved);
    return moved;
  }

  /**
   * A refund the processor made: the payment's refunded total and status, the ledger (the refund
   * taken back from the fee and the share in proportion), then what the transfer gives back.
   */
  async function refundRecorded(tx: DbTx, actor: Caller, payment: Payment, move: MoneyMove): Promise<Payment> {
    const before = payment.refundedCents;
    const total = Math.min(payment.amountCents, before + move.amountCents);
    const status: PaymentStatus = total >= payment.amountCents ? 'refunded' : 'partially_refunded';
    const moved = await repo.movePayment(tx, payment.id, REFUNDABLE, { refundedCents: total, status, refundedAt: now() });
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
    await logged(tx, actor, `payment.${status}`, payment, moved, { refund_cents: total - before, reason: move.reason, refund_id: move.processorId });
    await reverseInProportion(tx, actor, moved);
    return moved;
  }

  /** The charge went through: the client's money, the platform's fee and the prestataire's share held (ledger). */
  async function chargeRecorded(tx: DbTx, payment: Payment): Promise<void> {
    const share = shareFor(payment.amountCents, payment.commissionCents);
    await ledger.post(tx, {
      transactionId: `charge:${payment.id}`,
      kind: 'charge',
      paymentId: payment.id,
      prestataireId: payment.prestataireId,
      currency: payment.currency,
      entries: [
        { account: acct.client(payment.clientId), amountCents: -payment.amountCents },
        { account: acct.fees, amountCents: payment.commissionCents },
        { account: acct.held(payment.prestataireId), amountCents: share },
      ],
    });
  }

  /** Applies what the processor says of an intent: the same moves as its webhooks. */
  async function syncIntent(tx: DbTx, actor: Caller, payment: Payment, intent: Intent): Promise<Payment> {
    switch (intent.status) {
      case 'succeeded':
        return markSucceeded(tx, actor, payment, intent.chargeId);
      case 'processing':
        return markProcessing(tx, actor, payment);
      case 'failed':
        return markFailed(tx, actor, payment, intent.failureReason ?? 'The payment failed');
      case 'canceled':
        return markFailed(tx, actor, payment, 'The payment was canceled');
      default:
        return payment;
    }
  }

  // ---- transfers --------------------------------------------------------------------------------

  /** The refunds of a payment decided but not yet answered by the processor. */
  async function refundsInFlight(tx: DbTx, paymentId: number): Promise<number> {
    return (await moves.liveMovesOf(tx, paymentId, 'refund')).reduce((s, m) => s + m.amountCents, 0);
  }

  /**
   * What the prestataire should receive of a payment now: its share less what refunds took back,
   * counting the refunds on their way (a share sent before them would only be reversed after).
   */
  function transferable(p: Payment, pendingRefunds = 0): number {
    const share = shareFor(p.amountCents, p.commissionCents);
    return share - shareReversedFor(share, p.amountCents, Math.min(p.amountCents, p.refundedCents + pendingRefunds));
  }

  /**
   * Sends the prestataire's share of a completed appointment's payment to its connected account, or
   * holds it (an open dispute, a hold from a conversation, no connected account yet, an account that
   * cannot receive transfers yet). Sending commits a transfer move; the processor is called after
   * the transaction, by the caller or the worker.
   */
  async function transferFor(tx: DbTx, actor: Caller, payment: Payment): Promise<PaymentTransfer | undefined> {
    if (!PAID.includes(payment.status)) return undefined;
    const existing = await repo.findTransferByPayment(tx, payment.id);
    if (existing && existing.status !== 'held') return existing;
    const amount = transferable(payment, await refundsInFlight(tx, payment.id));
    const base = {
      paymentId: payment.id,
      appointmentId: payment.appointmentId,
      prestataireId: payment.prestataireId,
      transferGroup: `appointment_${payment.appointmentId}`,
    };
    const account = await repo.findConnectedAccount(tx, payment.prestataireId);
    // A dispute reported in the appointment's conversation holds the share until it is resolved,
    // whether it was reported before or after the payment.
    const disputed = !payment.holdReason && (await repo.hasOpenConversationDispute(tx, payment.appointmentId));
    const waitingReason = !account ? 'no_connected_account' : !account.transfersEnabled ? (existing?.holdReason === 'transfer_refused' ? 'transfer_refused' : 'account_not_ready') : null;
    const holdReason = payment.holdReason ?? (disputed ? 'conversation_dispute' : waitingReason);
    if (holdReason || amount <= 0) {
      if (amount <= 0 && !holdReason) return existing;
      if (existing?.holdReason === holdReason && existing.amountCents === amount) return existing;
      const held = await repo.upsertTransfer(tx, { ...base, amountCents: amount, status: 'held', holdReason, transferId: null });
      await recorder.record(actor, 'payment.transfer_held', { type: 'payment', id: payment.id }, { after: { amount_cents: amount, hold_reason: holdReason } }, tx);
      await outbox.publish(actor, { type: 'payment.transfer_held', subject: { type: 'payment', id: payment.id }, payload: { amount_cents: amount, hold_reason: holdReason } }, tx);
      return held;
    }
    const row = await repo.upsertTransfer(tx, { ...base, amountCents: amount, status: 'sending', holdReason: null, transferId: null, reversedCents: 0 });
    // One transfer move per payment: a refused one is tried again as its next attempt (a new key),
    // with the amount due now.
    const origin = `transfer:${payment.id}`;
    const previous = await moves.findMoveByOrigin(tx, origin, { lock: true });
    if (previous?.status === 'failed') await moves.retryMove(tx, previous.id, { amountCents: amount, target: account!.accountId });
    else if (!previous) {
      await moves.insertMove(tx, {
        kind: 'transfer',
        paymentId: payment.id,
        prestataireId: payment.prestataireId,
        amountCents: amount,
        currency: payment.currency,
        target: account!.accountId,
        origin,
      });
    }
    kick();
    return row;
  }

  /** After a refund: a transfer already made gives back the same proportion of the share (a reversal move). */
  async function reverseInProportion(tx: DbTx, _actor: Caller, payment: Payment): Promise<void> {
    const transfer = await repo.findTransferByPayment(tx, payment.id);
    if (!transfer) return;
    if (transfer.status === 'held') {
      // Not sent yet: what will be sent shrinks instead.
      await repo.updateTransfer(tx, transfer.id, { amountCents: transferable(payment, await refundsInFlight(tx, payment.id)) });
      return;
    }
    // Being sent: the reversal is asked once the transfer is made (transferRecorded).
    if (!transfer.transferId) return;
    // What the prestataire keeps must come down to its share of what was not refunded: the transfer
    // may have been made after earlier refunds, already smaller.
    const inFlight = (await moves.liveMovesOf(tx, payment.id, 'reversal')).reduce((s, m) => s + m.amountCents, 0);
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
    kick();
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
      for (const held of await repo.heldTransfersOf(tx, prestataireId, reason)) {
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
    const transfer = await repo.findTransferByPayment(tx, payment.id);
    if (!transfer) return;
    const total = Math.min(transfer.amountCents, transfer.reversedCents + move.amountCents);
    await repo.updateTransfer(tx, transfer.id, { reversedCents: total, status: total >= transfer.amountCents ? 'reversed' : 'partially_reversed' });
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
    const details = { transfer_id: transfer.transferId, reversed_cents: move.amountCents, total_reversed_cents: total };
    await recorder.record(actor, 'payment.transfer_reversed', { type: 'payment', id: payment.id }, { after: details }, tx);
    await outbox.publish(actor, { type: 'payment.transfer_reversed', subject: { type: 'payment', id: payment.id }, payload: details }, tx);
  }

  /** Commits a refund move of a locked payment once its checks pass. */
  async function requestRefund(tx: DbTx, actor: Actor, payment: Payment, amountCents: number | undefined, reason: string, origin: string | null): Promise<MoneyMove> {
    if (origin) {
      const asked = await moves.findMoveByOrigin(tx, origin);
      if (asked) return asked;
    }
    if (!REFUNDABLE.includes(payment.status)) {
      throw new AppError('conflict', `Cannot refund a payment whose status is ${payment.status} (allowed from: ${REFUNDABLE.join(', ')})`, {
        extra: { current_status: payment.status },
      });
    }
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
    await recorder.record(actor, 'payment.refund_requested', { type: 'payment', id: payment.id }, { after: { move_id: move.id, amount_cents: amount, reason: move.reason } }, tx);
    return move;
  }

  /** Runs a refund a request committed, and answers what became of it (502 when the processor refused). */
  async function runRequested(requested: MoneyMove): Promise<{ payment: Payment; move: MoneyMove; done: boolean }> {
    const move = (await mover.execute(requested.id)) ?? requested;
    const payment = (await repo.findPayment(db, move.paymentId!))!;
    if (move.status === 'failed') throw new AppError('bad_gateway', `The payment processor refused the refund: ${move.failureReason ?? 'refused'}`);
    // The reversal the refund asked of a share already sent is made now too (else by the worker).
    if (move.status === 'succeeded') for (const reversal of await moves.liveMovesOf(db, payment.id, 'reversal')) await mover.execute(reversal.id);
    return { payment, move, done: move.status === 'succeeded' };
  }

  /** Re-reads the accounts whose shares wait for them, and sends the shares of those now able to receive them. */
  async function refreshWaitingAccounts(): Promise<void> {
    for (const { prestataireId, accountId } of await repo.accountsWithWaitingShares(db, WAITING_FOR_ACCOUNT)) {
      let remote: ProcessorAccount;
      try {
        remote = await raw.retrieveAccount(accountId);
      } catch (error) {
        deps.log?.warn({ err: error, prestataire_id: prestataireId }, 'connected account unavailable for its waiting shares');
        continue;
      }
      await withTransaction(db, async (tx) => {
        const updated = await repo.updateConnectedAccount(tx, prestataireId, {
          chargesEnabled: remote.chargesEnabled,
          payoutsEnabled: remote.payoutsEnabled,
          detailsSubmitted: remote.detailsSubmitted,
          transfersEnabled: transfersEnabledOf(remote),
          requirements: remote.requirements,
        });
        if (updated.transfersEnabled) await releaseWaitingShares(tx, systemActor, prestataireId);
      });
    }
  }

  // ---- money moves: the processor call and its answer ------------------------------------------

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
    const subject = { type: 'payment', id: move.paymentId };
    if (!outcome.ok) {
      const details = { move_id: move.id, kind: move.kind, amount_cents: move.amountCents, attempt: move.attempt, code: outcome.code, error: outcome.message };
      if (move.kind === 'transfer' && payment) {
        // Refused (an account not yet able to receive transfers): the share waits, and goes out as the
        // move's next attempt when the account's capabilities change (account.updated, or the worker's re-read).
        const transfer = await repo.findTransferByPayment(tx, payment.id);
        if (transfer) await repo.updateTransfer(tx, transfer.id, { status: 'held', holdReason: 'transfer_refused' });
        await recorder.record(actor, 'payment.transfer_refused', subject, { after: details }, tx);
        return;
      }
      if (move.kind === 'payout') {
        const payout = await repo.findPayoutByMove(tx, move.id);
        if (payout && payout.status === 'pending') {
          await repo.updatePayout(tx, payout.id, { status: 'failed', failureReason: outcome.message });
          await recorder.record(actor, 'payout.failed', { type: 'payout', id: payout.id }, { before: { status: 'pending' }, after: details }, tx);
          await outbox.publish(actor, { type: 'payout.failed', subject: { type: 'payout', id: payout.id }, payload: { id: payout.id, amount_cents: payout.amountCents, status: 'failed', prestataire_id: payout.prestataireId } }, tx);
        }
        return;
      }
      await recorder.record(actor, `payment.${move.kind}_failed`, subject, { after: details }, tx);
      return;
    }
    switch (move.kind) {
      case 'refund':
        if (payment) await refundRecorded(tx, actor, payment, move);
        return;
      case 'transfer': {
        if (!payment) return;
        const transfer = await repo.findTransferByPayment(tx, payment.id);
        if (!transfer) return;
        const row = await repo.updateTransfer(tx, transfer.id, { status: 'paid', holdReason: null, transferId: outcome.processorId, amountCents: move.amountCents, reversedCents: 0 });
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
        const details = { transfer_id: outcome.processorId, amount_cents: move.amountCents, transfer_group: row.transferGroup };
        await recorder.record(actor, 'payment.transferred', subject, { after: details }, tx);
        await outbox.publish(actor, { type: 'payment.transferred', subject: { type: 'payment', id: payment.id }, payload: details }, tx);
        // Refunds made while it was on its way take their proportion back now.
        await reverseInProportion(tx, actor, payment);
        return;
      }
      case 'reversal':
        if (payment) await reversalRecorded(tx, actor, payment, move);
        return;
      case 'payout': {
        const payout = await repo.findPayoutByMove(tx, move.id);
        if (!payout) return;
        const row = await repo.updatePayout(tx, payout.id, { payoutId: outcome.processorId });
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
        await recorder.record(actor, 'payout.created', { type: 'payout', id: row.id }, { after: details }, tx);
        await outbox.publish(actor, { type: 'payout.created', subject: { type: 'payout', id: row.id }, payload: { ...details, prestataire_id: row.prestataireId } }, tx);
        return;
      }
    }
  }

  // ---- webhooks ---------------------------------------------------------------------------------

  async function paymentOf(tx: DbTx, object: Record<string, unknown>, kind: 'intent' | 'charge') {
    const intentId = kind === 'intent' ? str(object.id) : str(object.payment_intent);
    const chargeId = kind === 'charge' ? (str(object.charge) ?? str(object.id)) : null;
    return repo.findPaymentByProcessorRef(tx, processor.kind, { intentId, chargeId });
  }

  /** Applies one verified event once: its id is stored in the same transaction as its effect. */
  async function applyEvent(actor: Caller, event: ProcessorEvent): Promise<boolean> {
    return withTransaction(db, async (tx) => {
      if (!(await repo.rememberWebhookEvent(tx, event.id, event.type))) return false;
      const object = event.data.object;
      switch (event.type) {
        case 'payment_intent.processing':
        case 'payment_intent.succeeded':
        case 'payment_intent.payment_failed':
        case 'payment_intent.canceled': {
          const payment = await paymentOf(tx, object, 'intent');
          if (!payment) break;
          if (event.type === 'payment_intent.processing') await markProcessing(tx, actor, payment);
          else if (event.type === 'payment_intent.succeeded') await markSucceeded(tx, actor, payment, str(object.latest_charge));
          else {
            const error = object.last_payment_error as { message?: unknown } | null | undefined;
            const reason = event.type === 'payment_intent.canceled' ? 'The payment was canceled' : (str(error?.message) ?? 'The payment failed');
            await markFailed(tx, actor, payment, reason);
          }
          break;
        }
        case 'charge.refunded': {
          let payment = await paymentOf(tx, object, 'charge');
          if (!payment) break;
          // A refund proves the charge: a success delivered later changes nothing then.
          payment = await markSucceeded(tx, actor, payment, str(object.id));
          if (!REFUNDABLE.includes(payment.status) && payment.status !== 'refunded') break;
          // Our own refunds are recorded by their moves (this event may come before the answer to
          // the call that made one, or instead of it): those on their way are hurried. Only what
          // no move accounts for was refunded elsewhere (the processor's dashboard).
          const inFlight = await refundsInFlight(tx, payment.id);
          const outside = Math.min(payment.amountCents - payment.refundedCents - inFlight, (int(object.amount_refunded) ?? 0) - payment.refundedCents - inFlight);
          if (inFlight > 0) {
            await moves.hurryMoves(tx, payment.id, 'refund');
            kick();
          }
          if (outside > 0) {
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
          }
          break;
        }
        case 'charge.dispute.created': {
          const payment = await paymentOf(tx, object, 'charge');
          if (!payment || payment.disputeStatus === 'open') break;
          const moved = await repo.updatePayment(tx, payment.id, { disputeStatus: 'open', holdReason: 'dispute' });
          await logged(tx, actor, 'payment.dispute_opened', payment, moved, { dispute_id: str(object.id) });
          break;
        }
        case 'charge.dispute.closed': {
          const payment = await paymentOf(tx, object, 'charge');
          if (!payment || payment.disputeStatus === 'closed') break;
          const moved = await repo.updatePayment(tx, payment.id, {
            disputeStatus: 'closed',
            holdReason: payment.holdReason === 'dispute' ? null : payment.holdReason,
          });
          await logged(tx, actor, 'payment.dispute_closed', payment, moved, { dispute_id: str(object.id), outcome: str(object.status) });
          await transferIfCompleted(tx, actor, moved);
          break;
        }
        case 'account.updated': {
          const accountId = str(object.id);
          const account = accountId ? await repo.findConnectedAccountById(tx, accountId) : undefined;
          if (!account) break;
          const requirements = (object.requirements as { currently_due?: unknown } | undefined)?.currently_due;
          const updated = await repo.updateConnectedAccount(tx, account.prestataireId, {
            chargesEnabled: object.charges_enabled === true,
            payoutsEnabled: object.payouts_enabled === true,
            detailsSubmitted: object.details_submitted === true,
            transfersEnabled: transfersEnabledIn(object),
            requirements: Array.isArray(requirements) ? requirements.filter((r): r is string => typeof r === 'string') : account.requirements,
          });
          await recorder.record(actor, 'psp_account.updated', { type: 'user', id: account.prestataireId }, { before: accountAudit(account), after: accountAudit(updated) }, tx);
          // The shares that waited for this account go out (events may come late or twice: a share
          // already on its way is not sent again).
          if (updated.transfersEnabled) await releaseWaitingShares(tx, actor, account.prestataireId);
          break;
        }
        case 'payout.paid':
        case 'payout.failed': {
          const payoutId = str(object.id);
          const payout = payoutId ? await repo.findPayoutByPayoutId(tx, payoutId) : undefined;
          if (!payout || payout.status !== 'pending') break;
          const status = event.type === 'payout.paid' ? 'paid' : 'failed';
          const updated = await repo.updatePayout(tx, payout.id, { status, failureReason: status === 'failed' ? (str(object.failure_message) ?? 'The payout failed') : null });
          const details = { id: payout.id, payout_id: payout.payoutId, amount_cents: payout.amountCents, status };
          if (status === 'failed') {
            // The bank refused: the money is back in the connected account's balance.
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
          }
          await recorder.record(actor, `payout.${status}`, { type: 'payout', id: payout.id }, { before: { status: 'pending' }, after: details }, tx);
          await outbox.publish(actor, { type: `payout.${status}`, subject: { type: 'payout', id: updated.id }, payload: { ...details, prestataire_id: payout.prestataireId } }, tx);
          break;
        }
        case 'transfer.created':
        case 'transfer.reversed': {
          const transferId = str(object.id);
          const transfer = transferId ? await repo.findTransferByTransferId(tx, transferId) : undefined;
          const reversed = int(object.amount_reversed);
          if (!transfer || reversed === null) break;
          // As for refunds: our reversals are recorded by their moves; only what none accounts for
          // was reversed at the processor directly.
          const inFlight = (await moves.liveMovesOf(tx, transfer.paymentId, 'reversal')).reduce((sum, m) => sum + m.amountCents, 0);
          const outside = Math.min(transfer.amountCents - transfer.reversedCents - inFlight, reversed - transfer.reversedCents - inFlight);
          if (inFlight > 0) {
            await moves.hurryMoves(tx, transfer.paymentId, 'reversal');
            kick();
          }
          const payment = outside > 0 ? await repo.findPayment(tx, transfer.paymentId, { lock: true }) : undefined;
          if (!payment) break;
          const move = await moves.insertSettledMove(tx, {
            kind: 'reversal',
            paymentId: payment.id,
            prestataireId: payment.prestataireId,
            amountCents: outside,
            currency: payment.currency,
            target: transfer.transferId,
            reason: 'Reversed at the processor',
            origin: `processor-reversal:${payment.id}:${transfer.reversedCents + inFlight + outside}`,
          });
          if (move) await reversalRecorded(tx, actor, payment, move);
          break;
        }
        default:
          break;
      }
      return true;
    });
  }

  /** Verifies and applies one delivery; a bad signature answers 400 and changes nothing. */
  async function receiveWebhook(actor: Caller, rawBody: Buffer, signature: string | undefined) {
    let event: ProcessorEvent;
    try {
      event = processor.verifyWebhook(rawBody, signature);
    } catch (error) {
      if (error instanceof WebhookSignatureError) throw new AppError('bad_request', `Webhook signature verification failed: ${error.message}`);
      throw new AppError('bad_request', 'Webhook payload is not a valid event');
    }
    if (typeof event?.id !== 'string' || typeof event.type !== 'string' || !event.data || typeof event.data.object !== 'object') {
      throw new AppError('bad_request', 'Webhook payload is not a valid event');
    }
    const applied = await applyEvent(actor, event);
    return { id: event.id, type: event.type, applied };
  }

  /** The built-in processor's own deliveries (what Stripe would post to the webhook). */
  async function deliverBuiltinEvents(events?: { payload: string; signature: string }[]) {
    if (!isBuiltin(processor)) return;
    const list = events ?? processor.takeEvents();
    for (const e of list) await receiveWebhook({ kind: 'system', requestId: 'builtin-processor' }, Buffer.from(e.payload), e.signature);
  }

  function accountAudit(a: { accountId: string; chargesEnabled: boolean; payoutsEnabled: boolean; detailsSubmitted: boolean; requirements: string[] }) {
    return {
      account_id: a.accountId,
      charges_enabled: a.chargesEnabled,
      payouts_enabled: a.payoutsEnabled,
      details_submitted: a.detailsSubmitted,
      requirements: a.requirements,
    };
  }

  /** A payment the actor may see: its client, its prestataire, or an admin; 404 otherwise. */
  async function visiblePayment(actor: Actor, id: number): Promise<Payment> {
    const payment = await repo.findPayment(db, id);
    if (!payment || (actor.role !== 'admin' && payment.clientId !== actor.userId && payment.prestataireId !== actor.userId)) {
      throw AppError.notFound('Payment');
    }
    return payment;
  }

  function range(from: string | undefined, to: string | undefined) {
    const zone = config.timeZone;
    const start = from === undefined ? undefined : isCalendarDate(from) ? startOfDayIn(zone, from) : new Date(from);
    const end = to === undefined ? undefined : isCalendarDate(to) ? startOfDayIn(zone, addDays(to, 1)) : new Date(new Date(to).getTime() + 1);
    if (start && end && end <= start) throw AppError.validation({ to: ['Must not be before `from`'] });
    return { from: start, to: end };
  }

  return {
    processorKind: processor.kind,

    // ---- paying ---------------------------------------------------------------------------------

    /**
     * The client starts paying an ended appointment: one payment per appointment, created once
     * (201); called again while unpaid, the same payment (its amount follows the final price).
     */
    async initiate(actor: Actor, appointmentId: number): Promise<{ payment: Payment; clientSecret: string; created: boolean }> {
      /** The checks, with the rows locked (in the transaction that records) or not (before the call). */
      const check = async (tx: DbTx, lock: boolean) => {
        const appointment = lock ? await repo.lockAppointment(tx, appointmentId) : await repo.findAppointment(tx, appointmentId);
        if (!appointment || appointment.clientId !== actor.userId) throw AppError.notFound('Appointment');
        const existing = await repo.findPaymentByAppointment(tx, appointmentId, { lock });
        if (existing && PAID.includes(existing.status)) {
          throw new AppError('conflict', `This appointment is already paid (payment ${existing.status})`, { extra: { current_status: existing.status } });
        }
        if (appointment.status !== 'ended') {
          throw new AppError('conflict', `Cannot pay an appointment whose status is ${appointment.status} (allowed from: ended)`, {
            extra: { current_status: appointment.status },
          });
        }
        if (appointment.priceCents <= 0) throw new AppError('conflict', 'This appointment has nothing to pay', { extra: { current_status: appointment.status } });
        return { appointment, existing };
      };
      // Phase 1, read only: what to ask the processor. The processor is then called with no
      // transaction open and a key made of the appointment and its price, so two initiations at
      // once (two instances, a double tap) get the same intent.
      const { appointment, existing } = await check(db, false);
      if (existing) {
        if (existing.amountCents !== appointment.priceCents && existing.status !== 'processing') {
          await processor.updatePaymentIntentAmount(existing.intentId, appointment.priceCents, `payment-${existing.id}-amount-${appointment.priceCents}`);
          return withTransaction(db, async (tx) => {
            const { appointment: now, existing: current } = await check(tx, true);
            const settings = await commissionSettings(tx);
            if (!current || current.amountCents === now.priceCents || now.priceCents !== appointment.priceCents) {
              return { payment: current ?? existing, clientSecret: (current ?? existing).clientSecret, created: false };
            }
            const payment = await repo.updatePayment(tx, current.id, { amountCents: now.priceCents, commissionCents: commissionFor(now.priceCents, settings) });
            await logged(tx, actor, 'payment.amount_changed', current, payment);
            return { payment, clientSecret: payment.clientSecret, created: false };
          });
        }
        return { payment: existing, clientSecret: existing.clientSecret, created: false };
      }
      const intent = await processor.createPaymentIntent({
        amountCents: appointment.priceCents,
        currency: appointment.currency,
        transferGroup: `appointment_${appointment.id}`,
        metadata: { appointment_id: String(appointment.id), client_id: String(appointment.clientId), prestataire_id: String(appointment.prestataireId) },
        idempotencyKey: `payment-appointment-${appointment.id}-${appointment.priceCents}`,
      });
      // Phase 2: record the intent, unless another initiation recorded one meanwhile.
      return withTransaction(db, async (tx) => {
        const { appointment: locked, existing: recorded } = await check(tx, true);
        if (recorded) return { payment: recorded, clientSecret: recorded.clientSecret, created: false };
        if (locked.priceCents !== appointment.priceCents) {
          throw new AppError('conflict', 'The price changed while the payment was being prepared; try again', { extra: { current_status: locked.status } });
        }
        const settings = await commissionSettings(tx);
        const payment = await repo.insertPayment(tx, {
          appointmentId: locked.id,
          clientId: locked.clientId,
          prestataireId: locked.prestataireId,
          amountCents: locked.priceCents,
          commissionCents: commissionFor(locked.priceCents, settings),
          currency: locked.currency,
          processor: processor.kind,
          intentId: intent.id,
          clientSecret: intent.clientSecret,
        });
        await logged(tx, actor, 'payment.initiated', null, payment);
        return { payment, clientSecret: intent.clientSecret, created: true };
      });
    },

    /**
     * Re-reads the intent from the processor and applies what it says; never the client's word. With
     * the built-in processor, `simulate` stands in for the card confirmation and its webhooks.
     */
    async validate(actor: Actor, appointmentId: number, simulate?: 'succeeded' | 'failed'): Promise<Payment> {
      const found = await repo.findPaymentByAppointment(db, appointmentId);
      if (!found || found.clientId !== actor.userId) throw AppError.notFound('Payment');
      if (simulate) {
        if (!isBuiltin(processor)) throw AppError.validation({ simulate: ['Only available with the built-in payment processor'] });
        if (PAYABLE.includes(found.status)) await deliverBuiltinEvents(await processor.simulate(found.intentId, simulate));
      }
      const intent = await processor.retrievePaymentIntent(found.intentId);
      return withTransaction(db, async (tx) => {
        const payment = (await repo.findPayment(tx, found.id, { lock: true }))!;
        return syncIntent(tx, actor, payment, intent);
      });
    },

    receiveWebhook,

    // ---- transfers ------------------------------------------------------------------------------

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
        const transfer = await repo.findTransferByPayment(t, payment.id);
        if (transfer && transfer.status !== 'held') return false;
        const moved = await repo.updatePayment(t, payment.id, { holdReason: reason.slice(0, 200) });
        if (transfer) await repo.updateTransfer(t, transfer.id, { holdReason: moved.holdReason });
        await logged(t, actor, 'payment.transfer_hold_set', payment, moved);
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
          const transfer = await repo.findTransferByPayment(t, payment.id);
          if (transfer?.status !== 'held' || transfer.holdReason !== 'conversation_dispute') return false;
          await transferIfCompleted(t, actor, payment);
          return true;
        }
        // A card dispute is lifted by the processor alone (charge.dispute.closed).
        const holdReason = payment.disputeStatus === 'open' ? 'dispute' : null;
        const moved = await repo.updatePayment(t, payment.id, { holdReason });
        await logged(t, actor, 'payment.transfer_hold_released', payment, moved);
        await transferIfCompleted(t, actor, moved);
        return true;
      });
    },

    // ---- administration -------------------------------------------------------------------------

    async getCommissionSettings(): Promise<CommissionSettings> {
      return commissionSettings();
    },

    /** Applies to payments not yet paid: the commission is fixed when a charge succeeds. */
    async updateCommissionSettings(actor: Actor, next: CommissionSettings): Promise<CommissionSettings> {
      return withTransaction(db, async (tx) => {
        await repo.lockCommissionSettings(tx);
        const before = await commissionSettings(tx);
        await repo.writeCommissionSettings(
          tx,
          { percent_basis_points: next.percentBasisPoints, fixed_cents: next.fixedCents, minimum_cents: next.minimumCents },
          actor.userId,
        );
        await recorder.record(actor, 'commission_settings.updated', { type: 'settings', id: null }, { before: { ...before }, after: { ...next } }, tx);
        return next;
      });
    },

    /**
     * Refunds all or part of a paid payment; after completion the transfer gives back its proportion.
     * The refund is committed as a money move, then made at the processor with no transaction open:
     * `done` says whether the processor answered in time (else the worker finishes it, 202). A
     * refund the processor refuses answers 502 and changes nothing; a second refund while one is on
     * its way answers 409 at once.
     */
    async refund(actor: Actor, paymentId: number, input: { amount_cents?: number; reason: string }): Promise<{ payment: Payment; move: MoneyMove; done: boolean }> {
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

    /** Makes a committed money move at the processor now (the worker would otherwise). */
    async runMove(id: number): Promise<MoneyMove | undefined> {
      return mover.execute(id);
    },

    /**
     * The worker's pass: every due money move (waiting, retrying, or left executing by a caller that
     * vanished), and, at most every `refreshMs`, a re-read of the accounts whose shares wait for them
     * (for an `account.updated` that never came).
     */
    async drainMoves(opts: { refreshAccounts?: boolean } = {}): Promise<number> {
      if (opts.refreshAccounts) await refreshWaitingAccounts();
      return mover.drain();
    },

    /** How many moves wait on the processor (for /metrics). */
    moveStats: () => moves.liveMoveStats(db),

    /** Resolves once the moves being driven now have settled (closing). */
    async idle(): Promise<void> {
      if (kickTimer) clearTimeout(kickTimer);
      kickTimer = undefined;
      await mover.idle();
    },

    /** A payment's money moves, oldest first (404 when there is no such payment). */
    async moneyMoves(paymentId: number): Promise<MoneyMove[]> {
      if (!(await repo.findPayment(db, paymentId))) throw AppError.notFound('Payment');
      return moves.movesOfPayment(db, paymentId);
    },

    /** The ledger's entries, filtered by payment or prestataire, with each account's balance over them. */
    async ledger(query: { page: number; per_page: number; payment_id?: number; prestataire_id?: number }) {
      const filters = { paymentId: query.payment_id, prestataireId: query.prestataire_id };
      const [{ rows, total }, totals] = await Promise.all([
        ledger.listEntries(db, filters, query.per_page, pageOffset(query.page, query.per_page)),
        ledger.balances(db, filters),
      ]);
      return { rows, totals, meta: pageMeta(query.page, query.per_page, total) };
    },

    async list(query: { page: number; per_page: number; status?: PaymentStatus; user_id?: number; client_id?: number; prestataire_id?: number; from?: string; to?: string }) {
      const { rows, total } = await repo.listPayments(
        db,
        { status: query.status, partyId: query.user_id, clientId: query.client_id, prestataireId: query.prestataire_id, ...range(query.from, query.to) },
        query.per_page,
        pageOffset(query.page, query.per_page),
      );
      return { rows, meta: pageMeta(query.page, query.per_page, total) };
    },

    async stats(query: { group_by: 'day' | 'month'; from?: string; to?: string }) {
      const periods = await repo.paymentStats(db, { zone: config.timeZone, unit: query.group_by, ...range(query.from, query.to) });
      const totals = periods.reduce(
        (t, p) => ({ count: t.count + p.count, volume: t.volume + p.volume, commission: t.commission + p.commission, refunds: t.refunds + p.refunds }),
        { count: 0, volume: 0, commission: 0, refunds: 0 },
      );
      return { periods, totals };
    },

    // ---- the parties ----------------------------------------------------------------------------

    async history(actor: Actor, query: { page: number; per_page: number; status?: PaymentStatus }) {
      const { rows, total } = await repo.listPayments(db, { partyId: actor.userId, status: query.status }, query.per_page, pageOffset(query.page, query.per_page));
      return { rows, meta: pageMeta(query.page, query.per_page, total) };
    },

    async show(actor: Actor, paymentId: number): Promise<Payment> {
      return visiblePayment(actor, paymentId);
    },

    /** The invoice of a paid payment as a PDF, in the caller's language. */
    async invoice(actor: Actor, paymentId: number): Promise<{ number: string; pdf: Buffer }> {
      const payment = await visiblePayment(actor, paymentId);
      const invoice = await repo.findInvoice(db, payment.id);
      if (!invoice) throw new AppError('conflict', `A payment whose status is ${payment.status} has no invoice`, { extra: { current_status: payment.status } });
      const parties = await repo.invoiceParties(db, payment);
      const lang = await repo.userLang(db, actor.userId);
      const pdf = await renderInvoicePdf({
        lang,
        number: invoice.number,
        issuedAt: invoice.issuedAt,
        timeZone: config.timeZone,
        vatPercent: config.vatPercent,
        seller: parties.seller,
        buyer: parties.client,
        line: { description: parties.appointment.serviceName, date: parties.appointment.startsAt, amountCents: payment.amountCents },
        refundedCents: payment.refundedCents,
        currency: payment.currency,
      });
      return { number: invoice.number, pdf };
    },

    // ---- the prestataire's account and payouts --------------------------------------------------

    /** Creates the prestataire's connected account once, and answers a link to the processor's onboarding form. */
    async onboard(actor: Actor) {
      const { email } = await repo.userIdentity(db, actor.userId);
      let account = await repo.findConnectedAccount(db, actor.userId);
      if (!account) {
        // Outside any transaction, with a key of the prestataire alone: two onboardings at once get
        // the same account from the processor, and the first to record it wins.
        const created = await processor.createAccount({ email, idempotencyKey: `account-prestataire-${actor.userId}` });
        account = await withTransaction(db, async (tx) => {
          await repo.lockOnboarding(tx, actor.userId);
          const existing = await repo.findConnectedAccount(tx, actor.userId);
          if (existing) return existing;
          const row = await repo.insertConnectedAccount(tx, {
            prestataireId: actor.userId,
            accountId: created.id,
            chargesEnabled: created.chargesEnabled,
            payoutsEnabled: created.payoutsEnabled,
            detailsSubmitted: created.detailsSubmitted,
            transfersEnabled: transfersEnabledOf(created),
            requirements: created.requirements,
          });
          await recorder.record(actor, 'psp_account.created', { type: 'user', id: actor.userId }, { after: accountAudit(row) }, tx);
          return row;
        });
      }
      const link = await processor.createAccountLink({ accountId: account.accountId, returnUrl: config.returnUrl, refreshUrl: config.refreshUrl });
      await deliverBuiltinEvents();
      return { account: (await repo.findConnectedAccount(db, actor.userId))!, url: link.url, expiresAt: link.expiresAt };
    },

    /**
     * The connected account as the processor sees it now (capabilities, outstanding requirements).
     * It only reads: held shares go out on the processor's `account.updated`, or the worker's re-read.
     */
    async accountStatus(actor: Actor) {
      const account = await repo.findConnectedAccount(db, actor.userId);
      if (!account) return null;
      const remote = await processor.retrieveAccount(account.accountId);
      return {
        ...account,
        chargesEnabled: remote.chargesEnabled,
        payoutsEnabled: remote.payoutsEnabled,
        detailsSubmitted: remote.detailsSubmitted,
        transfersEnabled: transfersEnabledOf(remote),
        requirements: remote.requirements,
      };
    },

    /** Sets the bank account payouts go to; an IBAN failing its mod-97 check answers 422. */
    async setIban(actor: Actor, input: { iban: string; account_holder_name?: string }) {
      const iban = input.iban.replace(/\s+/g, '').toUpperCase();
      if (!isValidIban(iban)) throw AppError.validation({ iban: ['Must be a valid IBAN (its check digits do not match)'] });
      const account = await repo.findConnectedAccount(db, actor.userId);
      if (!account) throw new AppError('conflict', 'Start the onboarding first (POST /prestataire/psp/onboard)', { extra: { current_status: 'not_onboarded' } });
      const who = await repo.userIdentity(db, actor.userId);
      const holder = input.account_holder_name ?? who.businessName ?? `${who.firstName} ${who.lastName}`;
      // The key names the call, never the IBAN (keys land in the processor's request logs); the
      // SDK's own retries of this call reuse it.
      const bank = await processor.setBankAccount({ accountId: account.accountId, iban, holderName: holder, idempotencyKey: `bank-account-${account.accountId}-${randomUUID()}` });
      const updated = await withTransaction(db, async (tx) => {
        const row = await repo.updateConnectedAccount(tx, actor.userId, { bankAccountId: bank.id, ibanLast4: bank.last4 });
        await recorder.record(actor, 'psp_account.bank_account_set', { type: 'user', id: actor.userId }, { before: { iban_last4: account.ibanLast4 }, after: { iban_last4: row.ibanLast4 } }, tx);
        return row;
      });
      await deliverBuiltinEvents();
      return (await repo.findConnectedAccount(db, actor.userId)) ?? updated;
    },

    /**
     * Pays out the whole available balance to the bank account (manual payout schedule): a payout
     * move committed with its row, then made at the processor. One payout at a time (409 while one is
     * on its way); the processor's refusal answers 502 with the payout marked failed.
     */
    async withdraw(actor: Actor) {
      const account = await repo.findConnectedAccount(db, actor.userId);
      if (!account) throw new AppError('conflict', 'Start the onboarding first (POST /prestataire/psp/onboard)', { extra: { current_status: 'not_onboarded' } });
      if (!account.bankAccountId) throw new AppError('conflict', 'Set a bank account first (PUT /prestataire/psp/iban)', { extra: { current_status: 'no_bank_account' } });
      const busy = () => new AppError('conflict', 'A payout is on its way; try again once it is done', { extra: { current_status: 'payout_in_progress' } });
      if ((await moves.livePayoutsOf(db, actor.userId)).length > 0) throw busy();
      const available = await processor.availableBalance(account.accountId, 'EUR');
      if (available <= 0) throw new AppError('conflict', 'No available balance to pay out', { extra: { current_status: 'no_available_balance' } });
      const payout = await withTransaction(db, async (tx) => {
        await repo.lockOnboarding(tx, actor.userId);
        if ((await moves.livePayoutsOf(tx, actor.userId)).length > 0) throw busy();
        const { move } = await moves.insertMove(tx, {
          kind: 'payout',
          prestataireId: actor.userId,
          amountCents: available,
          currency: 'EUR',
          target: account.accountId,
          requestedBy: actor.userId,
        });
        const row = await repo.insertPayout(tx, { prestataireId: actor.userId, accountId: account.accountId, moveId: move.id, amountCents: available });
        await recorder.record(actor, 'payout.requested', { type: 'payout', id: row.id }, { after: { id: row.id, amount_cents: available, move_id: move.id } }, tx);
        return row;
      });
      const move = await mover.execute(payout.moveId!);
      const row = (await repo.listPayouts(db, actor.userId)).find((p) => p.id === payout.id) ?? payout;
      if (move?.status === 'failed') throw new AppError('bad_gateway', `The payment processor refused the payout: ${move.failureReason ?? 'refused'}`);
      return row;
    },

    /** Gross, commission and net of the prestataire's paid payments, what was paid out and what is pending; by month. */
    async revenue(actor: Actor) {
      const rows = await repo.paidPaymentsOf(db, actor.userId);
      const payoutRows = await repo.listPayouts(db, actor.userId);
      const months = new Map<string, { gross: number; commission: number; net: number }>();
      const totals = { gross: 0, commission: 0, net: 0, transferred: 0, held: 0 };
      for (const { payment, transfer } of rows) {
        const gross = payment.amountCents - payment.refundedCents;
        const net = transferable(payment);
        const month = DateTime.fromJSDate(payment.paidAt ?? payment.createdAt, { zone: config.timeZone }).toFormat('yyyy-MM');
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

export type PaymentsService = ReturnType<typeof createPaymentsService>;
