import type { FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses, iso } from '@repo/schemas';
import { actorOf } from '../../lib/context.js';
import {
  AccountStatusResponse,
  IbanBody,
  OnboardResponse,
  PayoutResponse,
  presentAccount,
  presentPayout,
  RevenueResponse,
} from './payments.schemas.js';
import type { PaymentsService } from './payments.service.js';

/** The prestataire's connected account, its bank account, its payouts and its revenue. */
export function paymentsPrestataireRoutes(deps: { payments: PaymentsService }): FastifyPluginAsyncZod {
  return async (app) => {
    const service = deps.payments;
    const prestataireOnly = app.auth.requireRole('prestataire');
    const security = [{ bearerAuth: [] }];

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
