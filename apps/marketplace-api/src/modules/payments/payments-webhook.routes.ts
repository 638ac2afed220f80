import { AppError, type FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses } from '@repo/schemas';
import { anonymousOf } from '../../lib/context.js';
import { WebhookResponse } from './payments.schemas.js';
import type { PaymentsService } from './payments.service.js';

const TAG = 'payments';

/**
 * The processor's webhook: its deliveries are verified over the exact bytes Stripe signed, so in this
 * plugin only, bodies are kept raw instead of parsed.
 */
export function paymentsWebhookRoutes(deps: { payments: PaymentsService }): FastifyPluginAsyncZod {
  return async (app) => {
    const service = deps.payments;
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 512 * 1024 }, (_request, body, done) => done(null, body));
    app.post(
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
  };
}
