import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import { isBuiltin, WebhookSignatureError, type ProcessorEvent } from '../../integrations/payments/index.js';
import type { Caller } from '../../lib/context.js';
import type { AccountsService } from './accounts.service.js';
import type { ChargesService } from './charges.service.js';
import * as moves from './money-moves.repository.js';
import type { BuiltinDelivery, PaymentsContext } from './payments.context.js';
import * as repo from './payments.repository.js';
import type { PayoutsService } from './payouts.service.js';
import type { RefundsService } from './refunds.service.js';
import * as transfers from './transfers.repository.js';
import type { TransfersService } from './transfers.service.js';

const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);
const int = (v: unknown): number | null => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null);

type Handler = (tx: DbTx, actor: Caller, event: ProcessorEvent, object: Record<string, unknown>) => Promise<void>;

/**
 * The processor's webhook (DESIGN.md §6): the source of truth of a payment's state. Each verified
 * event is stored by its id and applied once, in the same transaction, whatever the order or the
 * number of deliveries; each type is handed to the part of the module it concerns.
 */
export function createWebhookEvents(
  ctx: PaymentsContext,
  parts: { charges: ChargesService; refunds: RefundsService; transfers: TransfersService; accounts: AccountsService; payouts: PayoutsService },
) {
  const { db, processor } = ctx;
  const { charges } = parts;

  /** The payment of an intent or a charge, locked. */
  async function paymentOf(tx: DbTx, object: Record<string, unknown>, kind: 'intent' | 'charge') {
    const intentId = kind === 'intent' ? str(object.id) : str(object.payment_intent);
    const chargeId = kind === 'charge' ? (str(object.charge) ?? str(object.id)) : null;
    return repo.findPaymentByProcessorRef(tx, processor.kind, { intentId, chargeId });
  }

  const intentEvent: Handler = async (tx, actor, event, object) => {
    const payment = await paymentOf(tx, object, 'intent');
    if (!payment) return;
    if (event.type === 'payment_intent.processing') await charges.markProcessing(tx, actor, payment);
    else if (event.type === 'payment_intent.succeeded') await charges.markSucceeded(tx, actor, payment, str(object.latest_charge));
    else {
      const error = object.last_payment_error as { message?: unknown } | null | undefined;
      const reason = event.type === 'payment_intent.canceled' ? 'The payment was canceled' : (str(error?.message) ?? 'The payment failed');
      await charges.markFailed(tx, actor, payment, reason);
    }
  };

  /**
   * A transfer the processor reports reversed. As for refunds: our reversals are recorded by their
   * moves (those on their way are hurried); only what none accounts for was reversed at the processor
   * directly, and is recorded as a move already made.
   */
  const transferReversed: Handler = async (tx, actor, _event, object) => {
    const transferId = str(object.id);
    const transfer = transferId ? await transfers.findTransferByTransferId(tx, transferId) : undefined;
    const reversed = int(object.amount_reversed);
    if (!transfer || reversed === null) return;
    const inFlight = await moves.liveAmountOf(tx, transfer.paymentId, 'reversal');
    const outside = Math.min(transfer.amountCents - transfer.reversedCents - inFlight, reversed - transfer.reversedCents - inFlight);
    if (inFlight > 0) {
      await moves.hurryMoves(tx, transfer.paymentId, 'reversal');
      ctx.kick();
    }
    const payment = outside > 0 ? await repo.findPayment(tx, transfer.paymentId, { lock: true }) : undefined;
    if (!payment) return;
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
    if (move) await parts.transfers.reversalRecorded(tx, actor, payment, move);
  };

  const handlers: Record<string, Handler> = {
    'payment_intent.processing': intentEvent,
    'payment_intent.succeeded': intentEvent,
    'payment_intent.payment_failed': intentEvent,
    'payment_intent.canceled': intentEvent,
    'charge.refunded': async (tx, actor, _event, object) => {
      const found = await paymentOf(tx, object, 'charge');
      if (!found) return;
      // A refund proves the charge: a success delivered later changes nothing then.
      const payment = await charges.markSucceeded(tx, actor, found, str(object.id));
      await parts.refunds.chargeRefunded(tx, actor, payment, int(object.amount_refunded) ?? 0);
    },
    'charge.dispute.created': async (tx, actor, _event, object) => {
      const payment = await paymentOf(tx, object, 'charge');
      if (payment) await parts.transfers.disputeOpened(tx, actor, payment, str(object.id));
    },
    'charge.dispute.closed': async (tx, actor, _event, object) => {
      const payment = await paymentOf(tx, object, 'charge');
      if (payment) await parts.transfers.disputeClosed(tx, actor, payment, { dispute_id: str(object.id), outcome: str(object.status) });
    },
    'account.updated': (tx, actor, _event, object) => parts.accounts.accountUpdated(tx, actor, object),
    'payout.paid': (tx, actor, _event, object) => parts.payouts.payoutAnswered(tx, actor, 'payout.paid', object),
    'payout.failed': (tx, actor, _event, object) => parts.payouts.payoutAnswered(tx, actor, 'payout.failed', object),
    'transfer.created': transferReversed,
    'transfer.reversed': transferReversed,
  };

  /** Applies one verified event once: its id is stored in the same transaction as its effect. */
  async function applyEvent(actor: Caller, event: ProcessorEvent): Promise<boolean> {
    return withTransaction(db, async (tx) => {
      if (!(await repo.rememberWebhookEvent(tx, event.id, event.type))) return false;
      const handler = Object.hasOwn(handlers, event.type) ? handlers[event.type] : undefined;
      await handler?.(tx, actor, event, event.data.object);
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

  return {
    receiveWebhook,

    /** The built-in processor's own deliveries (what Stripe would post to the webhook). */
    async deliverBuiltinEvents(events?: BuiltinDelivery[]): Promise<void> {
      if (!isBuiltin(processor)) return;
      const list = events ?? processor.takeEvents();
      for (const e of list) await receiveWebhook({ kind: 'system', requestId: 'builtin-processor' }, Buffer.from(e.payload), e.signature);
    },
  };
}

export type WebhookEvents = ReturnType<typeof createWebhookEvents>;
