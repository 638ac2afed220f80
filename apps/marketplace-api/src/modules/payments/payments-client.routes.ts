import type { FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses, paginatedEnvelope } from '@repo/schemas';
import { z } from 'zod';
import { actorOf } from '../../lib/context.js';
import {
  AppointmentPaymentParams,
  HistoryQuery,
  InitiateResponse,
  PaymentParams,
  PaymentResponse,
  presentPayment,
  ValidateBody,
} from './payments.schemas.js';
import type { PaymentsService } from './payments.service.js';

const TAG = 'payments';

/** The client pays its appointment; either party reads its payments and their invoices. */
export function paymentsClientRoutes(deps: { payments: PaymentsService }): FastifyPluginAsyncZod {
  return async (app) => {
    const service = deps.payments;
    const clientOnly = app.auth.requireRole('client');
    const security = [{ bearerAuth: [] }];


    app.post(
      '/appointments/:appointment/payment/initiate',
      {
        onRequest: clientOnly,
        schema: {
          operationId: 'initiateAppointmentPayment',
          tags: [TAG],
          summary: 'Start paying your ended appointment: its payment and the client secret to confirm the card with',
          description: 'Creates the payment once (201); called again while unpaid, answers the same payment (200). A paid or not yet ended appointment answers 409.',
          security,
          params: AppointmentPaymentParams,
          response: { 200: envelope(InitiateResponse), 201: envelope(InitiateResponse), ...errorResponses(401, 403, 404, 409, 422, 429, 502) },
        },
      },
      async (request, reply) => {
        const { payment, clientSecret, created } = await service.initiate(actorOf(request), request.params.appointment);
        return reply.status(created ? 201 : 200).send({ data: { payment: presentPayment(payment), client_secret: clientSecret }, message: 'Payment ready' });
      },
    );

    app.post(
      '/appointments/:appointment/payment/validate',
      {
        onRequest: clientOnly,
        schema: {
          operationId: 'validateAppointmentPayment',
          tags: [TAG],
          summary: "Re-read your payment from the processor (the client's word is never taken)",
          description: 'With the built-in processor, `simulate` settles the payment as the card confirmation and the webhook that follows would.',
          security,
          params: AppointmentPaymentParams,
          body: ValidateBody,
          response: { 200: envelope(PaymentResponse), ...errorResponses(400, 401, 403, 404, 422, 429, 502) },
        },
      },
      async (request) => {
        const payment = await service.validate(actorOf(request), request.params.appointment, request.body?.simulate);
        return { data: presentPayment(payment) };
      },
    );

    app.get(
      '/payments/history',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'paymentHistory',
          tags: [TAG],
          summary: 'Your payments, as client or prestataire, newest first',
          security,
          querystring: HistoryQuery,
          response: { 200: paginatedEnvelope(PaymentResponse), ...errorResponses(401, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await service.history(actorOf(request), request.query);
        return { data: rows.map(presentPayment), meta };
      },
    );

    app.get(
      '/payments/:payment/invoice',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'paymentInvoice',
          tags: [TAG],
          summary: 'The invoice of a paid payment of yours, as a PDF in your language',
          description: 'A payment not paid has no invoice (409).',
          security,
          params: PaymentParams,
          produces: ['application/pdf'],
          response: { 200: z.any().describe('The PDF'), ...errorResponses(401, 404, 409, 422, 429) },
        },
      },
      async (request, reply) => {
        const { number, pdf } = await service.invoice(actorOf(request), request.params.payment);
        return reply
          .header('content-type', 'application/pdf')
          .header('content-disposition', `attachment; filename="invoice-${number}.pdf"`)
          .header('cache-control', 'private, no-store')
          .send(pdf);
      },
    );
  };
}
