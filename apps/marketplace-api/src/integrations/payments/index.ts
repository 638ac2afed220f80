import type { Config } from '../../config.js';
import { createBuiltinProcessor } from './builtin.js';
import type { PaymentProcessor } from './processor.js';
import { createStripeProcessor } from './stripe.js';

export * from './processor.js';
export { createBuiltinProcessor, type BuiltinProcessor } from './builtin.js';
export { createStripeProcessor, toProcessorError, type StripeProcessorOptions } from './stripe.js';

/** Stripe when STRIPE_SECRET_KEY is set; otherwise the built-in processor, offline. */
export function createPaymentProcessor(config: Pick<Config, 'payments'>): PaymentProcessor {
  const { stripe, webhookSecret } = config.payments;
  if (stripe) return createStripeProcessor({ ...stripe, webhookSecret: webhookSecret ?? '' });
  return createBuiltinProcessor({ webhookSecret });
}
