import type { FastifyPluginAsyncZod } from '@repo/http';
import { paymentsAdminRoutes } from './payments-admin.routes.js';
import { paymentsClientRoutes } from './payments-client.routes.js';
import { paymentsPrestataireRoutes } from './payments-prestataire.routes.js';
import { paymentsWebhookRoutes } from './payments-webhook.routes.js';
import type { PaymentsService } from './payments.service.js';
import type { Reconciliation } from './reconciliation.service.js';

/**
 * Paying an appointment, the processor's webhook, refunds, the prestataire's account and payouts,
 * invoices: one plugin per audience.
 */
export function paymentsRoutes(deps: { payments: PaymentsService; reconciliation: Reconciliation; timeZone: string }): FastifyPluginAsyncZod {
  return async (app) => {
    await app.register(paymentsWebhookRoutes(deps));
    await app.register(paymentsClientRoutes(deps));
    await app.register(paymentsAdminRoutes(deps));
    await app.register(paymentsPrestataireRoutes(deps));
  };
}
