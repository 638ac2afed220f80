import { AppError } from '@repo/http';
import { DateTime } from 'luxon';
import type { DbTx } from '../../db/index.js';
import type { Payment } from '../../db/schema/index.js';
import type { Actor } from '../../lib/context.js';
import { renderInvoicePdf } from './invoice-pdf.js';
import * as invoices from './invoices.repository.js';
import { visiblePayment, type PaymentsContext } from './payments.context.js';

/** Invoices (DESIGN.md §6): one per paid payment, numbered without gaps within its year, printed on demand. */
export function createInvoicesService(ctx: PaymentsContext) {
  return {
    /** Issues the invoice of a payment paid at `paidAt`, in the transaction that records the charge. */
    async issue(tx: DbTx, payment: Payment, paidAt: Date) {
      const year = DateTime.fromJSDate(paidAt, { zone: ctx.config.timeZone }).year;
      return invoices.issueInvoice(tx, payment.id, year);
    },

    /** The invoice of a paid payment as a PDF, in the caller's language. */
    async invoice(actor: Actor, paymentId: number): Promise<{ number: string; pdf: Buffer }> {
      const payment = await visiblePayment(ctx, actor, paymentId);
      const invoice = await invoices.findInvoice(ctx.db, payment.id);
      if (!invoice) throw new AppError('conflict', `A payment whose status is ${payment.status} has no invoice`, { extra: { current_status: payment.status } });
      const parties = await invoices.invoiceParties(ctx.db, payment);
      const lang = await invoices.userLang(ctx.db, actor.userId);
      const pdf = await renderInvoicePdf({
        lang,
        number: invoice.number,
        issuedAt: invoice.issuedAt,
        timeZone: ctx.config.timeZone,
        vatPercent: ctx.config.vatPercent,
        seller: parties.seller,
        buyer: parties.client,
        line: { description: parties.appointment.serviceName, date: parties.appointment.startsAt, amountCents: payment.amountCents },
        refundedCents: payment.refundedCents,
        currency: payment.currency,
      });
      return { number: invoice.number, pdf };
    },
  };
}

export type InvoicesService = ReturnType<typeof createInvoicesService>;
