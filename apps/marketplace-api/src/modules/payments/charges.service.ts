import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { Appointment, Payment } from '../../db/schema/index.js';
import { isBuiltin, type Intent } from '../../integrations/payments/index.js';
import type { Actor, Caller } from '../../lib/context.js';
import { transition } from '../../lib/transitions.js';
import { commissionFor, shareFor } from './commission.js';
import type { CommissionService } from './commission.service.js';
import type { InvoicesService } from './invoices.service.js';
import * as ledger from './ledger.repository.js';
import { ledgerAccounts as acct } from './ledger.repository.js';
import { logged, moveDeps, moveIfFrom, PAID, PAYABLE, type PaymentsContext } from './payments.context.js';
import * as repo from './payments.repository.js';

type Initiated = { payment: Payment; clientSecret: string; created: boolean };

/**
 * Charges (DESIGN.md §6): the client pays an ended appointment's final price through a payment
 * intent; the processor's word (its webhooks, or a re-read) moves the payment through
 * `paymentMachine`, and the charge that goes through fixes the commission, posts the ledger and
 * issues the invoice.
 */
export function createChargesService(ctx: PaymentsContext, parts: { commission: CommissionService; invoices: InvoicesService }) {
  const { db, processor } = ctx;

  // ---- the processor's word on an intent: moves of a payment the caller holds locked ------------

  /** The charge went through: commission fixed from the current settings, appointment paid, invoice issued. */
  async function markSucceeded(tx: DbTx, actor: Caller, payment: Payment, chargeId: string | null): Promise<Payment> {
    if (!PAYABLE.includes(payment.status)) {
      if (chargeId && !payment.chargeId) return repo.updatePayment(tx, payment.id, { chargeId });
      return payment;
    }
    const paidAt = ctx.now();
    const commissionCents = commissionFor(payment.amountCents, await parts.commission.current(tx));
    // Issued first, so that the move's log names it; a rollback gives its number back.
    const invoice = await parts.invoices.issue(tx, payment, paidAt);
    const { row: moved } = await transition(tx, moveDeps(ctx, actor), repo.paymentMachine, payment.id, {
      verb: 'record the charge of',
      from: PAYABLE,
      to: 'succeeded',
      action: 'payment.succeeded',
      set: (p) => ({ chargeId: chargeId ?? p.chargeId, commissionCents, failureReason: null, paidAt }),
      details: { invoice_number: invoice.number },
    });
    await repo.setAppointmentPaidAt(tx, payment.appointmentId, paidAt);
    await chargeRecorded(tx, moved);
    return moved;
  }

  async function markProcessing(tx: DbTx, actor: Caller, payment: Payment): Promise<Payment> {
    const moved = await moveIfFrom(tx, moveDeps(ctx, actor), repo.paymentMachine, payment.id, payment.status, {
      verb: 'process',
      from: ['requires_payment', 'failed'],
      to: 'processing',
      action: 'payment.processing',
      set: () => ({ failureReason: null }),
    });
    return moved ?? payment;
  }

  async function markFailed(tx: DbTx, actor: Caller, payment: Payment, reason: string): Promise<Payment> {
    const moved = await moveIfFrom(tx, moveDeps(ctx, actor), repo.paymentMachine, payment.id, payment.status, {
      verb: 'fail',
      from: ['requires_payment', 'processing'],
      to: 'failed',
      action: 'payment.failed',
      set: () => ({ failureReason: reason.slice(0, 500) }),
    });
    return moved ?? payment;
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

  // ---- paying -----------------------------------------------------------------------------------

  /** The checks of an initiation, with the rows locked (in the transaction that records) or not (before the call). */
  async function payable(tx: DbTx, actor: Actor, appointmentId: number, lock: boolean) {
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
  }

  /** An unpaid payment whose appointment's price changed since: the intent's amount follows it, then the payment's. */
  async function followPrice(actor: Actor, appointment: Appointment, existing: Payment): Promise<Initiated> {
    await processor.updatePaymentIntentAmount(existing.intentId, appointment.priceCents, `payment-${existing.id}-amount-${appointment.priceCents}`);
    return withTransaction(db, async (tx) => {
      const { appointment: now, existing: current } = await payable(tx, actor, appointment.id, true);
      const settings = await parts.commission.current(tx);
      if (!current || current.amountCents === now.priceCents || now.priceCents !== appointment.priceCents) {
        return { payment: current ?? existing, clientSecret: (current ?? existing).clientSecret, created: false };
      }
      const payment = await repo.updatePayment(tx, current.id, { amountCents: now.priceCents, commissionCents: commissionFor(now.priceCents, settings) });
      await logged(ctx, tx, actor, 'payment.amount_changed', current, payment);
      return { payment, clientSecret: payment.clientSecret, created: false };
    });
  }

  return {
    processorKind: processor.kind,
    markSucceeded,
    markProcessing,
    markFailed,

    /**
     * The client starts paying an ended appointment: one payment per appointment, created once
     * (201); called again while unpaid, the same payment (its amount follows the final price).
     */
    async initiate(actor: Actor, appointmentId: number): Promise<Initiated> {
      // Phase 1, read only: what to ask the processor. The processor is then called with no
      // transaction open and a key made of the appointment and its price, so two initiations at
      // once (two instances, a double tap) get the same intent.
      const { appointment, existing } = await payable(db, actor, appointmentId, false);
      if (existing) {
        if (existing.amountCents !== appointment.priceCents && existing.status !== 'processing') return followPrice(actor, appointment, existing);
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
        const { appointment: locked, existing: recorded } = await payable(tx, actor, appointmentId, true);
        if (recorded) return { payment: recorded, clientSecret: recorded.clientSecret, created: false };
        if (locked.priceCents !== appointment.priceCents) {
          throw new AppError('conflict', 'The price changed while the payment was being prepared; try again', { extra: { current_status: locked.status } });
        }
        const settings = await parts.commission.current(tx);
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
        await logged(ctx, tx, actor, 'payment.initiated', null, payment);
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
        if (PAYABLE.includes(found.status)) await ctx.deliverBuiltinEvents(await processor.simulate(found.intentId, simulate));
      }
      const intent = await processor.retrievePaymentIntent(found.intentId);
      return withTransaction(db, async (tx) => {
        const payment = (await repo.findPayment(tx, found.id, { lock: true }))!;
        return syncIntent(tx, actor, payment, intent);
      });
    },
  };
}

export type ChargesService = ReturnType<typeof createChargesService>;
