import { withTransaction } from '@repo/db';
import { AppError, pageMeta, pageOffset } from '@repo/http';
import { DateTime } from 'luxon';
import type { DbTx } from '../../db/index.js';
import { PAID_PAYMENT_STATUSES, type Payment, type PaymentStatus, type PaymentTransfer } from '../../db/schema/index.js';
import {
  isBuiltin,
  WebhookSignatureError,
  type Intent,
  type PaymentProcessor,
  type ProcessorEvent,
} from '../../integrations/payments/index.js';
import type { Actor, Caller } from '../../lib/context.js';
import { addDays, isCalendarDate, startOfDayIn } from '../../lib/time.js';
import type { ActivityRecorder } from '../activity-log/activity-log.recorder.js';
import type { Outbox } from '../outbox/outbox.js';
import { commissionFor, DEFAULT_COMMISSION, shareFor, shareReversedFor, type CommissionSettings } from './commission.js';
import { renderInvoicePdf } from './invoice-pdf.js';
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
}) {
  const { db, recorder, outbox, config } = deps;
  const processor = guarded(deps.processor);
  const now = deps.now ?? (() => new Date());

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

  /** Brings the refunded amount up to what the processor says was refunded in all (never down). */
  async function markRefunded(tx: DbTx, actor: Caller, payment: Payment, refundedTotal: number, reason: string | null): Promise<Payment> {
    const total = Math.min(payment.amountCents, refundedTotal);
    if (!PAID.includes(payment.status) || total <= payment.refundedCents) return payment;
    const status: PaymentStatus = total >= payment.amountCents ? 'refunded' : 'partially_refunded';
    const moved = await repo.movePayment(tx, payment.id, REFUNDABLE, { refundedCents: total, status, refundedAt: now() });
    if (!moved) return payment;
    await logged(tx, actor, `payment.${status}`, payment, moved, { refund_cents: total - payment.refundedCents, reason });
    await reverseInProportion(tx, actor, moved);
    return moved;
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

  /** What the prestataire should receive of a payment now: its share less what refunds took back. */
  function transferable(p: Payment): number {
    const share = shareFor(p.amountCents, p.commissionCents);
    return share - shareReversedFor(share, p.amountCents, p.refundedCents);
  }

  /**
   * Sends the prestataire's share of a completed appointment's payment to its connected account, or
   * holds it (an open dispute, a hold from a conversation, no connected account yet).
   */
  async function transferFor(tx: DbTx, actor: Caller, payment: Payment): Promise<PaymentTransfer | undefined> {
    if (!PAID.includes(payment.status)) return undefined;
    const existing = await repo.findTransferByPayment(tx, payment.id);
    if (existing && existing.status !== 'held') return existing;
    const amount = transferable(payment);
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
    const holdReason = payment.holdReason ?? (disputed ? 'conversation_dispute' : account ? null : 'no_connected_account');
    if (holdReason || amount <= 0) {
      if (amount <= 0 && !holdReason) return existing;
      if (existing?.holdReason === holdReason && existing.amountCents === amount) return existing;
      const held = await repo.upsertTransfer(tx, { ...base, amountCents: amount, status: 'held', holdReason, transferId: null });
      await recorder.record(actor, 'payment.transfer_held', { type: 'payment', id: payment.id }, { after: { amount_cents: amount, hold_reason: holdReason } }, tx);
      await outbox.publish(actor, { type: 'payment.transfer_held', subject: { type: 'payment', id: payment.id }, payload: { amount_cents: amount, hold_reason: holdReason } }, tx);
      return held;
    }
    let transfer: { id: string };
    try {
      transfer = await processor.createTransfer({
        amountCents: amount,
        currency: payment.currency,
        destination: account!.accountId,
        transferGroup: base.transferGroup,
        sourceCharge: payment.chargeId,
        idempotencyKey: `transfer-payment-${payment.id}`,
      });
    } catch (error) {
      // A refusal (an account not yet able to receive transfers) must not stall the outbox behind
      // it: the share waits, held, until the account's status is checked again.
      if (!(error instanceof AppError) || error.code !== 'bad_gateway') throw error;
      if (existing?.holdReason === 'transfer_refused') return existing;
      const held = await repo.upsertTransfer(tx, { ...base, amountCents: amount, status: 'held', holdReason: 'transfer_refused', transferId: null });
      await recorder.record(actor, 'payment.transfer_refused', { type: 'payment', id: payment.id }, { after: { amount_cents: amount, error: error.message } }, tx);
      return held;
    }
    const row = await repo.upsertTransfer(tx, { ...base, amountCents: amount, status: 'paid', holdReason: null, transferId: transfer.id, reversedCents: 0 });
    const details = { transfer_id: transfer.id, amount_cents: amount, transfer_group: base.transferGroup };
    await recorder.record(actor, 'payment.transferred', { type: 'payment', id: payment.id }, { after: details }, tx);
    await outbox.publish(actor, { type: 'payment.transferred', subject: { type: 'payment', id: payment.id }, payload: details }, tx);
    return row;
  }

  /** After a refund: the transfer already made gives back the same proportion of the share. */
  async function reverseInProportion(tx: DbTx, actor: Caller, payment: Payment): Promise<void> {
    const transfer = await repo.findTransferByPayment(tx, payment.id);
    if (!transfer) return;
    if (transfer.status === 'held') {
      // Not sent yet: what will be sent shrinks instead.
      await repo.updateTransfer(tx, transfer.id, { amountCents: transferable(payment) });
      return;
    }
    if (!transfer.transferId) return;
    const share = shareFor(payment.amountCents, payment.commissionCents);
    const target = Math.min(transfer.amountCents, shareReversedFor(share, payment.amountCents, payment.refundedCents));
    const delta = target - transfer.reversedCents;
    if (delta <= 0) return;
    await processor.reverseTransfer({ transferId: transfer.transferId, amountCents: delta, idempotencyKey: `reversal-payment-${payment.id}-${target}` });
    await repo.updateTransfer(tx, transfer.id, { reversedCents: target, status: target >= transfer.amountCents ? 'reversed' : 'partially_reversed' });
    const details = { transfer_id: transfer.transferId, reversed_cents: delta, total_reversed_cents: target };
    await recorder.record(actor, 'payment.transfer_reversed', { type: 'payment', id: payment.id }, { after: details }, tx);
    await outbox.publish(actor, { type: 'payment.transfer_reversed', subject: { type: 'payment', id: payment.id }, payload: details }, tx);
  }

  /** The transfer of a payment whose appointment has completed, if it has. */
  async function transferIfCompleted(tx: DbTx, actor: Caller, payment: Payment) {
    const appointment = await repo.findAppointment(tx, payment.appointmentId);
    if (appointment?.status === 'completed') await transferFor(tx, actor, payment);
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
          await markRefunded(tx, actor, payment, int(object.amount_refunded) ?? 0, null);
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
            requirements: Array.isArray(requirements) ? requirements.filter((r): r is string => typeof r === 'string') : account.requirements,
          });
          await recorder.record(actor, 'psp_account.updated', { type: 'user', id: account.prestataireId }, { before: accountAudit(account), after: accountAudit(updated) }, tx);
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
          await recorder.record(actor, `payout.${status}`, { type: 'payout', id: payout.id }, { before: { status: 'pending' }, after: details }, tx);
          await outbox.publish(actor, { type: `payout.${status}`, subject: { type: 'payout', id: updated.id }, payload: { ...details, prestataire_id: payout.prestataireId } }, tx);
          break;
        }
        case 'transfer.created':
        case 'transfer.reversed': {
          const transferId = str(object.id);
          const transfer = transferId ? await repo.findTransferByTransferId(tx, transferId) : undefined;
          const reversed = int(object.amount_reversed);
          if (!transfer || reversed === null || reversed <= transfer.reversedCents) break;
          const total = Math.min(transfer.amountCents, reversed);
          await repo.updateTransfer(tx, transfer.id, { reversedCents: total, status: total >= transfer.amountCents ? 'reversed' : 'partially_reversed' });
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
      return withTransaction(db, async (tx) => {
        const appointment = await repo.lockAppointment(tx, appointmentId);
        if (!appointment || appointment.clientId !== actor.userId) throw AppError.notFound('Appointment');
        const existing = await repo.findPaymentByAppointment(tx, appointmentId, { lock: true });
        if (existing && PAID.includes(existing.status)) {
          throw new AppError('conflict', `This appointment is already paid (payment ${existing.status})`, { extra: { current_status: existing.status } });
        }
        if (appointment.status !== 'ended') {
          throw new AppError('conflict', `Cannot pay an appointment whose status is ${appointment.status} (allowed from: ended)`, {
            extra: { current_status: appointment.status },
          });
        }
        if (appointment.priceCents <= 0) throw new AppError('conflict', 'This appointment has nothing to pay', { extra: { current_status: appointment.status } });
        const settings = await commissionSettings(tx);
        if (existing) {
          let payment = existing;
          if (existing.amountCents !== appointment.priceCents && existing.status !== 'processing') {
            await processor.updatePaymentIntentAmount(existing.intentId, appointment.priceCents, `payment-${existing.id}-amount-${appointment.priceCents}`);
            payment = await repo.updatePayment(tx, existing.id, {
              amountCents: appointment.priceCents,
              commissionCents: commissionFor(appointment.priceCents, settings),
            });
            await logged(tx, actor, 'payment.amount_changed', existing, payment);
          }
          return { payment, clientSecret: payment.clientSecret, created: false };
        }
        const intent = await processor.createPaymentIntent({
          amountCents: appointment.priceCents,
          currency: appointment.currency,
          transferGroup: `appointment_${appointment.id}`,
          metadata: { appointment_id: String(appointment.id), client_id: String(appointment.clientId), prestataire_id: String(appointment.prestataireId) },
          idempotencyKey: `payment-appointment-${appointment.id}-${appointment.priceCents}`,
        });
        const payment = await repo.insertPayment(tx, {
          appointmentId: appointment.id,
          clientId: appointment.clientId,
          prestataireId: appointment.prestataireId,
          amountCents: appointment.priceCents,
          commissionCents: commissionFor(appointment.priceCents, settings),
          currency: appointment.currency,
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

    /** Refunds all or part of a paid payment; after completion the transfer gives back its proportion. */
    async refund(actor: Actor, paymentId: number, input: { amount_cents?: number; reason: string }): Promise<Payment> {
      const result = await withTransaction(db, async (tx) => {
        const payment = await repo.findPayment(tx, paymentId, { lock: true });
        if (!payment) throw AppError.notFound('Payment');
        if (!REFUNDABLE.includes(payment.status)) {
          throw new AppError('conflict', `Cannot refund a payment whose status is ${payment.status} (allowed from: ${REFUNDABLE.join(', ')})`, {
            extra: { current_status: payment.status },
          });
        }
        const remaining = payment.amountCents - payment.refundedCents;
        const amount = input.amount_cents ?? remaining;
        if (amount > remaining) throw AppError.validation({ amount_cents: [`Must not exceed the amount not yet refunded (${remaining})`] });
        await processor.refund({
          intentId: payment.intentId,
          amountCents: amount,
          reason: input.reason,
          idempotencyKey: `refund-payment-${payment.id}-${payment.refundedCents}-${amount}`,
        });
        return markRefunded(tx, actor, payment, payment.refundedCents + amount, input.reason);
      });
      await deliverBuiltinEvents();
      return result;
    },

    /**
     * Refunds part of an appointment's payment, as an administrator decided when resolving a dispute
     * (the same rules as `refund`); 422 on `refund_cents` when the appointment has no payment.
     */
    async refundAppointment(actor: Actor, appointmentId: number, amountCents: number, reason: string): Promise<Payment> {
      const payment = await repo.findPaymentByAppointment(db, appointmentId);
      if (!payment) throw AppError.validation({ refund_cents: ['The appointment has no payment to refund'] });
      try {
        return await this.refund(actor, payment.id, { amount_cents: amountCents, reason });
      } catch (error) {
        // The refund's own field is the resolution's refund_cents.
        if (error instanceof AppError && error.statusCode === 422) throw AppError.validation({ refund_cents: Object.values(error.errors ?? {}).flat() });
        throw error;
      }
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
      const account = await withTransaction(db, async (tx) => {
        await repo.lockOnboarding(tx, actor.userId);
        const existing = await repo.findConnectedAccount(tx, actor.userId);
        if (existing) return existing;
        const created = await processor.createAccount({ email, idempotencyKey: `account-prestataire-${actor.userId}` });
        const row = await repo.insertConnectedAccount(tx, {
          prestataireId: actor.userId,
          accountId: created.id,
          chargesEnabled: created.chargesEnabled,
          payoutsEnabled: created.payoutsEnabled,
          detailsSubmitted: created.detailsSubmitted,
          requirements: created.requirements,
        });
        await recorder.record(actor, 'psp_account.created', { type: 'user', id: actor.userId }, { after: accountAudit(row) }, tx);
        return row;
      });
      const link = await processor.createAccountLink({ accountId: account.accountId, returnUrl: config.returnUrl, refreshUrl: config.refreshUrl });
      await deliverBuiltinEvents();
      return { account: (await repo.findConnectedAccount(db, actor.userId))!, url: link.url, expiresAt: link.expiresAt };
    },

    /** The connected account as the processor sees it now (capabilities, outstanding requirements). */
    async accountStatus(actor: Actor) {
      const account = await repo.findConnectedAccount(db, actor.userId);
      if (!account) return null;
      const remote = await processor.retrieveAccount(account.accountId);
      return withTransaction(db, async (tx) => {
        const updated = await repo.updateConnectedAccount(tx, actor.userId, {
          chargesEnabled: remote.chargesEnabled,
          payoutsEnabled: remote.payoutsEnabled,
          detailsSubmitted: remote.detailsSubmitted,
          requirements: remote.requirements,
        });
        // An account that can now receive money gets the shares that waited for it.
        const waiting = [
          ...(await repo.heldTransfersOf(tx, actor.userId, 'no_connected_account')),
          ...(await repo.heldTransfersOf(tx, actor.userId, 'transfer_refused')),
        ];
        for (const held of waiting) {
          const payment = await repo.findPayment(tx, held.paymentId, { lock: true });
          if (payment) await transferFor(tx, actor, payment);
        }
        return updated;
      });
    },

    /** Sets the bank account payouts go to; an IBAN failing its mod-97 check answers 422. */
    async setIban(actor: Actor, input: { iban: string; account_holder_name?: string }) {
      const iban = input.iban.replace(/\s+/g, '').toUpperCase();
      if (!isValidIban(iban)) throw AppError.validation({ iban: ['Must be a valid IBAN (its check digits do not match)'] });
      const account = await repo.findConnectedAccount(db, actor.userId);
      if (!account) throw new AppError('conflict', 'Start the onboarding first (POST /prestataire/psp/onboard)', { extra: { current_status: 'not_onboarded' } });
      const who = await repo.userIdentity(db, actor.userId);
      const holder = input.account_holder_name ?? who.businessName ?? `${who.firstName} ${who.lastName}`;
      const bank = await processor.setBankAccount({ accountId: account.accountId, iban, holderName: holder, idempotencyKey: `iban-${account.accountId}-${iban}` });
      const updated = await withTransaction(db, async (tx) => {
        const row = await repo.updateConnectedAccount(tx, actor.userId, { bankAccountId: bank.id, ibanLast4: bank.last4 });
        await recorder.record(actor, 'psp_account.bank_account_set', { type: 'user', id: actor.userId }, { before: { iban_last4: account.ibanLast4 }, after: { iban_last4: row.ibanLast4 } }, tx);
        return row;
      });
      await deliverBuiltinEvents();
      return (await repo.findConnectedAccount(db, actor.userId)) ?? updated;
    },

    /** Pays out the whole available balance to the bank account (manual payout schedule). */
    async withdraw(actor: Actor) {
      const payout = await withTransaction(db, async (tx) => {
        await repo.lockOnboarding(tx, actor.userId);
        const account = await repo.findConnectedAccount(tx, actor.userId);
        if (!account) throw new AppError('conflict', 'Start the onboarding first (POST /prestataire/psp/onboard)', { extra: { current_status: 'not_onboarded' } });
        if (!account.bankAccountId) throw new AppError('conflict', 'Set a bank account first (PUT /prestataire/psp/iban)', { extra: { current_status: 'no_bank_account' } });
        const available = await processor.availableBalance(account.accountId, 'EUR');
        if (available <= 0) throw new AppError('conflict', 'No available balance to pay out', { extra: { current_status: 'no_available_balance' } });
        const pendingCount = (await repo.listPayouts(tx, actor.userId)).length;
        const created = await processor.createPayout({
          accountId: account.accountId,
          amountCents: available,
          currency: 'EUR',
          idempotencyKey: `payout-${account.accountId}-${pendingCount + 1}-${available}`,
        });
        const row = await repo.insertPayout(tx, { prestataireId: actor.userId, accountId: account.accountId, payoutId: created.id, amountCents: available });
        const details = { id: row.id, payout_id: row.payoutId, amount_cents: row.amountCents, status: row.status };
        await recorder.record(actor, 'payout.created', { type: 'payout', id: row.id }, { after: details }, tx);
        await outbox.publish(actor, { type: 'payout.created', subject: { type: 'payout', id: row.id }, payload: { ...details, prestataire_id: actor.userId } }, tx);
        return row;
      });
      await deliverBuiltinEvents();
      return (await repo.listPayouts(db, actor.userId)).find((p) => p.id === payout.id) ?? payout;
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
