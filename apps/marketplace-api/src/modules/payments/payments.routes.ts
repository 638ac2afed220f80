import { AppError, type FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses, iso, paginatedEnvelope } from '@repo/schemas';
import { actorOf, anonymousOf } from '../../lib/context.js';
import type { PaymentsService } from './payments.service.js';
import type { Reconciliation } from './reconciliation.service.js';
import {
  AccountStatusResponse,
  AdminPaymentsQuery,
  AppointmentPaymentParams,
  commissionFromBody,
  CommissionSettingsBody,
  CommissionSettingsResponse,
  HistoryQuery,
  IbanBody,
  InitiateResponse,
  OnboardResponse,
  PaymentParams,
  PaymentResponse,
  PayoutResponse,
  presentAccount,
  presentCommission,
  presentFigures,
  presentPayment,
  presentPayout,
  LedgerEntryResponse,
  LedgerMeta,
  LedgerQuery,
  MoneyMoveResponse,
  presentEntry,
  presentMove,
  RefundBody,
  presentReconciliationItem,
  ReconciliationItemResponse,
  ReconciliationQuery,
  ReconciliationReportResponse,
  RefundResponse,
  RevenueResponse,
  StatsQuery,
  StatsResponse,
  ValidateBody,
  WebhookResponse,
} from './payments.schemas.js';
import { z } from 'zod';

const TAG = 'payments';

/** Paying an appointment, the processor's webhook, refunds, the prestataire's account and payouts, invoices. */
export function paymentsRoutes(deps: { payments: PaymentsService; reconciliation: Reconciliation; timeZone: string }): FastifyPluginAsyncZod {
  return async (app) => {
    const service = deps.payments;
    const clientOnly = app.auth.requireRole('client');
    const prestataireOnly = app.auth.requireRole('prestataire');
    const adminOnly = app.auth.requireRole('admin');
    const security = [{ bearerAuth: [] }];

    // The webhook is verified over the exact bytes Stripe signed: in this plugin only, bodies are
    // kept raw instead of parsed.
    await app.register(async (raw) => {
      raw.removeAllContentTypeParsers();
      raw.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 512 * 1024 }, (_request, body, done) => done(null, body));
      raw.post(
        '/webhooks/psp',
        {
          // Stripe delivers in bursts from a few addresses: a limit of its own, well above the public one.
          config: { checksOwnText: true, rateLimit: { max: 1000, timeWindow: 60_000 } },
          schema: {
            operationId: 'paymentWebhook',
            tags: [TAG],
            summary: "The payment processor's events (Stripe's format and `Stripe-Signature` header, 300 s tolerance)",
            description:
              'Each event id is applied once, whatever the order or the number of deliveries. An unsigned or badly signed ' +
              'delivery answers 400 and changes nothing.',
            security: [],
            response: { 200: WebhookResponse, ...errorResponses(400, 413, 429) },
          },
        },
        async (request) => {
          const body = request.body;
          if (!Buffer.isBuffer(body) || body.length === 0) throw new AppError('bad_request', 'Webhook body is missing');
          const header = request.headers['stripe-signature'];
          const result = await service.receiveWebhook(anonymousOf(request), body, typeof header === 'string' ? header : undefined);
          return { received: true as const, ...result };
        },
      );
    });

    // ---- paying ---------------------------------------------------------------------------------

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

    // ---- administration -------------------------------------------------------------------------

    app.get(
      '/admin/commission-settings',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminReadCommissionSettings',
          tags: ['admin'],
          summary: "The platform's commission: a percentage, a fixed part and a minimum",
          security,
          response: { 200: envelope(CommissionSettingsResponse), ...errorResponses(401, 403, 429) },
        },
      },
      async () => ({ data: presentCommission(await service.getCommissionSettings()) }),
    );

    app.put(
      '/admin/commission-settings',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminUpdateCommissionSettings',
          tags: ['admin'],
          summary: 'Change the commission; it applies to the payments not yet paid',
          security,
          body: CommissionSettingsBody,
          response: { 200: envelope(CommissionSettingsResponse), ...errorResponses(400, 401, 403, 422, 429) },
        },
      },
      async (request) => {
        const settings = await service.updateCommissionSettings(actorOf(request), commissionFromBody(request.body));
        return { data: presentCommission(settings), message: 'Commission settings updated' };
      },
    );

    app.get(
      '/admin/payments',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminListPayments',
          tags: ['admin'],
          summary: 'Payments, newest first; filters: status, a party, a date range (platform time zone)',
          security,
          querystring: AdminPaymentsQuery,
          response: { 200: paginatedEnvelope(PaymentResponse), ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await service.list(request.query);
        return { data: rows.map(presentPayment), meta };
      },
    );

    app.get(
      '/admin/payments/stats',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminPaymentStats',
          tags: ['admin'],
          summary: 'Volume, commission earned and refunds of paid payments, by day or month of payment (platform time zone)',
          security,
          querystring: StatsQuery,
          response: { 200: envelope(StatsResponse), ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const { periods, totals } = await service.stats(request.query);
        return {
          data: {
            currency: 'EUR',
            time_zone: deps.timeZone,
            group_by: request.query.group_by,
            periods: periods.map((p) => ({ period: p.period, ...presentFigures(p) })),
            totals: presentFigures(totals),
          },
        };
      },
    );

    app.post(
      '/admin/payments/:payment/refund',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminRefundPayment',
          tags: ['admin'],
          summary: 'Refund all or part of a paid payment, with a reason',
          description:
            'Before the appointment completes the prestataire is untouched; after it, the transfer is reversed in the same ' +
            'proportion (a reversal). The refund is recorded first, then made at the processor: 200 once the processor answered, ' +
            '202 when it has not yet (it is finished without another request; `refund.status` tells). More than what is left to ' +
            'refund answers 422; a payment not paid, or a refund of it still on its way, 409; a refusal of the processor, 502.',
          security,
          params: PaymentParams,
          body: RefundBody,
          response: { 200: envelope(RefundResponse), 202: envelope(RefundResponse), ...errorResponses(400, 401, 403, 404, 409, 422, 429, 502) },
        },
      },
      async (request, reply) => {
        const { payment, move, done } = await service.refund(actorOf(request), request.params.payment, request.body);
        const data = { ...presentPayment(payment), refund: presentMove(move) };
        if (!done) return reply.status(202).send({ data, message: 'Refund on its way: the processor has not answered yet; it will be completed without another request' });
        return { data, message: 'Payment refunded' };
      },
    );

    app.get(
      '/admin/ledger',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminLedger',
          tags: ['admin'],
          summary: "The ledger's entries (oldest first) for a payment or a prestataire, with each account's balance",
          description:
            'Every movement of money is a group of entries sharing a `transaction_id` and summing to zero: the charge (the client, ' +
            'the platform fee, the share held), refunds, transfers, reversals and payouts. Accounts: `client:<id>`, `platform:fees`, ' +
            '`refunds`, `prestataire:<id>:held`, `prestataire:<id>:payable`, `prestataire:<id>:paid_out`.',
          security,
          querystring: LedgerQuery,
          response: { 200: paginatedEnvelope(LedgerEntryResponse, LedgerMeta), ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const { rows, totals, meta } = await service.ledger(request.query);
        return { data: rows.map(presentEntry), meta: { ...meta, totals } };
      },
    );

    app.get(
      '/admin/reconciliation',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminReconciliation',
          tags: ['admin'],
          summary: 'The differences between the ledger and the payment processor that are still open, oldest first',
          description:
            'Each run (hourly, or `POST /admin/reconciliation/run`) compares every paid payment (charge, refunds, transfers and ' +
            'reversals) and every connected account (payouts) with the processor; a difference stays open until a run no longer finds it.',
          security,
          querystring: ReconciliationQuery,
          response: { 200: paginatedEnvelope(ReconciliationItemResponse), ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await deps.reconciliation.list(request.query);
        return { data: rows.map(presentReconciliationItem), meta };
      },
    );

    app.post(
      '/admin/reconciliation/run',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminRunReconciliation',
          tags: ['admin'],
          summary: 'Reconcile the ledger with the payment processor now, and answer the report',
          security,
          response: { 200: envelope(ReconciliationReportResponse), ...errorResponses(401, 403, 409, 422, 429, 502) },
        },
      },
      async () => {
        const r = await deps.reconciliation.run();
        return {
          data: {
            ran_at: iso(r.ranAt),
            payments_checked: r.payments,
            accounts_checked: r.accounts,
            unreachable: r.unreachable,
            open: r.open,
            differences: r.differences.map((d) => ({
              key: d.key,
              kind: d.kind,
              payment_id: d.paymentId ?? null,
              prestataire_id: d.prestataireId ?? null,
              expected_cents: d.expectedCents ?? null,
              actual_cents: d.actualCents ?? null,
              detail: d.detail,
            })),
          },
        };
      },
    );

    app.get(
      '/admin/payments/:payment/money-moves',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminPaymentMoneyMoves',
          tags: ['admin'],
          summary: "A payment's money moves (refunds, transfer, reversals) with their attempts and the processor's answers",
          security,
          params: PaymentParams,
          response: { 200: envelope(z.array(MoneyMoveResponse)), ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => ({ data: (await service.moneyMoves(request.params.payment)).map(presentMove) }),
    );

    // ---- the prestataire's account and payouts --------------------------------------------------

    app.post(
      '/prestataire/psp/onboard',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'prestatairePspOnboard',
          tags: ['prestataire'],
          summary: 'Your connected payment account (created once) and a link to its onboarding form',
          security,
          response: { 200: envelope(OnboardResponse), ...errorResponses(401, 403, 422, 429, 502) },
        },
      },
      async (request) => {
        const { account, url, expiresAt } = await service.onboard(actorOf(request));
        return { data: { account: presentAccount(account), url, expires_at: iso(expiresAt) } };
      },
    );

    app.get(
      '/prestataire/psp/status',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'prestatairePspStatus',
          tags: ['prestataire'],
          summary: "Your connected account's capabilities and outstanding requirements, as the processor sees them",
          security,
          response: { 200: envelope(AccountStatusResponse), ...errorResponses(401, 403, 429, 502) },
        },
      },
      async (request) => ({ data: presentAccount(await service.accountStatus(actorOf(request))) }),
    );

    app.put(
      '/prestataire/psp/iban',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'prestatairePspIban',
          tags: ['prestataire'],
          summary: 'The bank account your payouts go to (IBAN checked with mod 97)',
          description: 'Before onboarding answers 409.',
          security,
          body: IbanBody,
          response: { 200: envelope(AccountStatusResponse), ...errorResponses(400, 401, 403, 409, 422, 429, 502) },
        },
      },
      async (request) => {
        const account = await service.setIban(actorOf(request), request.body);
        return { data: presentAccount(account), message: 'Bank account saved' };
      },
    );

    app.post(
      '/prestataire/retrait',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'prestataireWithdraw',
          tags: ['prestataire'],
          summary: 'Pay out your available balance to your bank account',
          description: 'No account, no bank account or nothing available answers 409.',
          security,
          response: { 201: envelope(PayoutResponse), ...errorResponses(401, 403, 409, 422, 429, 502) },
        },
      },
      async (request, reply) => {
        const payout = await service.withdraw(actorOf(request));
        return reply.status(201).send({ data: presentPayout(payout), message: 'Payout requested' });
      },
    );

    app.get(
      '/prestataire/revenue',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'prestataireRevenue',
          tags: ['prestataire'],
          summary: 'Your revenue: gross, commission, net, paid out and pending, by month',
          security,
          response: { 200: envelope(RevenueResponse), ...errorResponses(401, 403, 429) },
        },
      },
      async (request) => {
        const r = await service.revenue(actorOf(request));
        return { data: { ...r, payouts: r.payouts.map(presentPayout) } };
      },
    );
  };
}
