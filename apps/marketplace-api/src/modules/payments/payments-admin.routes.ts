import type { FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses, iso, paginatedEnvelope } from '@repo/schemas';
import { z } from 'zod';
import { actorOf } from '../../lib/context.js';
import {
  AdminPaymentsQuery,
  commissionFromBody,
  CommissionSettingsBody,
  CommissionSettingsResponse,
  LedgerEntryResponse,
  LedgerMeta,
  LedgerQuery,
  MoneyMoveResponse,
  PaymentParams,
  PaymentResponse,
  presentCommission,
  presentEntry,
  presentFigures,
  presentMove,
  presentPayment,
  presentReconciliationItem,
  ReconciliationItemResponse,
  ReconciliationQuery,
  ReconciliationReportResponse,
  RefundBody,
  RefundResponse,
  StatsQuery,
  StatsResponse,
} from './payments.schemas.js';
import type { PaymentsService } from './payments.service.js';
import type { Reconciliation } from './reconciliation.service.js';

/** The administrators' payments: the commission, lists and figures, refunds, the ledger and its reconciliation. */
export function paymentsAdminRoutes(deps: { payments: PaymentsService; reconciliation: Reconciliation; timeZone: string }): FastifyPluginAsyncZod {
  return async (app) => {
    const service = deps.payments;
    const adminOnly = app.auth.requireRole('admin');
    const security = [{ bearerAuth: [] }];

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
  };
}
