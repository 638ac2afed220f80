/**
 * The payments module's public entry: what the rest of the app may use of it. Its repositories and
 * its parts (charges, refunds, transfers, payouts…) stay private behind the one service.
 */
import { createPaymentProcessor } from '../../integrations/payments/index.js';
import type { ModuleContext } from '../context.js';
import { paymentsOutboxConsumer } from './payments.consumer.js';
import { findPayment } from './payments.repository.js';
import { paymentsRoutes } from './payments.routes.js';
import { createPaymentsService } from './payments.service.js';
import { createReconciliation } from './reconciliation.service.js';

export { presentPayment } from './payments.schemas.js';
export { createPaymentsService, type PaymentsConfig, type PaymentsService } from './payments.service.js';
export type { Reconciliation } from './reconciliation.service.js';

/** A payment's row, for the consumers of payment events (the real-time channels). */
export const paymentRecords = { findPayment };

/**
 * Payments: paying an appointment, the processor's webhook, transfers on completion, refunds, the
 * prestataire's connected account and payouts, invoices; the money moves' worker and the
 * reconciliation run as jobs (app.ts). Stripe when configured, the built-in processor otherwise.
 */
export function paymentsModule(ctx: ModuleContext) {
  const { db, recorder, outbox, config, app } = ctx;
  const processor = ctx.paymentProcessor ?? createPaymentProcessor(config);
  const payments = createPaymentsService({
    db,
    recorder,
    outbox,
    processor,
    config: {
      returnUrl: config.payments.returnUrl,
      refreshUrl: config.payments.refreshUrl,
      vatPercent: config.payments.vatPercent,
      timeZone: config.platformTimeZone,
    },
    log: app.log,
  });
  ctx.consumers.push(paymentsOutboxConsumer({ payments }));
  const reconciliation = createReconciliation({ db, processor, log: app.log });
  return { payments, reconciliation, routes: paymentsRoutes({ payments, reconciliation, timeZone: config.platformTimeZone }) };
}
