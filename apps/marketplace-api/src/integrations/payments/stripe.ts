import Stripe from 'stripe';
import {
  WEBHOOK_TOLERANCE_SECONDS,
  WebhookSignatureError,
  type Intent,
  type IntentStatus,
  type PaymentProcessor,
  type ProcessorAccount,
  type ProcessorEvent,
} from './processor.js';

export interface StripeProcessorOptions {
  secretKey: string;
  webhookSecret: string;
  /** Where the API is (tests point the SDK at a local server that answers as Stripe does). */
  host?: string;
  port?: number;
  protocol?: 'http' | 'https';
  timeoutMs?: number;
}

/** Stripe's PaymentIntent statuses in the words of our payment machine. */
function intentStatus(pi: Stripe.PaymentIntent): IntentStatus {
  switch (pi.status) {
    case 'succeeded':
      return 'succeeded';
    case 'processing':
    case 'requires_capture':
      return 'processing';
    case 'canceled':
      return 'canceled';
    default:
      // A declined card sends the intent back to requires_payment_method with the error kept.
      return pi.last_payment_error ? 'failed' : 'requires_payment';
  }
}

function toIntent(pi: Stripe.PaymentIntent): Intent {
  const charge = pi.latest_charge;
  return {
    id: pi.id,
    status: intentStatus(pi),
    amountCents: pi.amount,
    currency: pi.currency.toUpperCase(),
    clientSecret: pi.client_secret ?? '',
    chargeId: typeof charge === 'string' ? charge : (charge?.id ?? null),
    failureReason: pi.last_payment_error?.message ?? null,
  };
}

function toAccount(a: Stripe.Account): ProcessorAccount {
  return {
    id: a.id,
    chargesEnabled: a.charges_enabled ?? false,
    payoutsEnabled: a.payouts_enabled ?? false,
    detailsSubmitted: a.details_submitted ?? false,
    requirements: a.requirements?.currently_due ?? [],
  };
}

/**
 * Stripe Connect with separate charges and transfers: the charge lands on the platform, the
 * prestataire's share is transferred to its Express account. Every write carries an idempotency key
 * so a retried call never charges, transfers or pays out twice.
 */
export function createStripeProcessor(options: StripeProcessorOptions): PaymentProcessor {
  const stripe = new Stripe(options.secretKey, {
    host: options.host,
    port: options.port,
    protocol: options.protocol,
    timeout: options.timeoutMs ?? 20_000,
    maxNetworkRetries: 2,
    telemetry: false,
  });

  return {
    kind: 'stripe',

    async createPaymentIntent(input) {
      const pi = await stripe.paymentIntents.create(
        {
          amount: input.amountCents,
          currency: input.currency.toLowerCase(),
          transfer_group: input.transferGroup,
          metadata: input.metadata,
          automatic_payment_methods: { enabled: true },
        },
        { idempotencyKey: input.idempotencyKey },
      );
      return toIntent(pi);
    },

    async retrievePaymentIntent(id) {
      return toIntent(await stripe.paymentIntents.retrieve(id));
    },

    async updatePaymentIntentAmount(id, amountCents, idempotencyKey) {
      return toIntent(await stripe.paymentIntents.update(id, { amount: amountCents }, { idempotencyKey }));
    },

    async refund(input) {
      const refund = await stripe.refunds.create(
        { payment_intent: input.intentId, amount: input.amountCents, metadata: { reason: input.reason.slice(0, 500) } },
        { idempotencyKey: input.idempotencyKey },
      );
      return { id: refund.id };
    },

    async createAccount(input) {
      const account = await stripe.accounts.create(
        {
          type: 'express',
          country: 'FR',
          email: input.email,
          capabilities: { card_payments: { requested: true }, transfers: { requested: true } },
          // Payouts only when the prestataire asks (`retrait`).
          settings: { payouts: { schedule: { interval: 'manual' } } },
        },
        { idempotencyKey: input.idempotencyKey },
      );
      return toAccount(account);
    },

    async retrieveAccount(id) {
      return toAccount(await stripe.accounts.retrieve(id));
    },

    async createAccountLink(input) {
      const link = await stripe.accountLinks.create({
        account: input.accountId,
        return_url: input.returnUrl,
        refresh_url: input.refreshUrl,
        type: 'account_onboarding',
      });
      return { url: link.url, expiresAt: new Date(link.expires_at * 1000) };
    },

    async setBankAccount(input) {
      const bank = await stripe.accounts.createExternalAccount(
        input.accountId,
        {
          external_account: {
            object: 'bank_account',
            country: input.iban.slice(0, 2),
            currency: 'eur',
            account_number: input.iban,
            account_holder_name: input.holderName,
          },
          default_for_currency: true,
        },
        { idempotencyKey: input.idempotencyKey },
      );
      return { id: bank.id, last4: 'last4' in bank && bank.last4 ? bank.last4 : input.iban.slice(-4) };
    },

    async createTransfer(input) {
      const transfer = await stripe.transfers.create(
        {
          amount: input.amountCents,
          currency: input.currency.toLowerCase(),
          destination: input.destination,
          transfer_group: input.transferGroup,
          ...(input.sourceCharge ? { source_transaction: input.sourceCharge } : {}),
        },
        { idempotencyKey: input.idempotencyKey },
      );
      return { id: transfer.id };
    },

    async reverseTransfer(input) {
      const reversal = await stripe.transfers.createReversal(input.transferId, { amount: input.amountCents }, { idempotencyKey: input.idempotencyKey });
      return { id: reversal.id };
    },

    async availableBalance(accountId, currency) {
      const balance = await stripe.balance.retrieve({}, { stripeAccount: accountId });
      return balance.available.filter((b) => b.currency === currency.toLowerCase()).reduce((sum, b) => sum + b.amount, 0);
    },

    async createPayout(input) {
      const payout = await stripe.payouts.create(
        { amount: input.amountCents, currency: input.currency.toLowerCase() },
        { stripeAccount: input.accountId, idempotencyKey: input.idempotencyKey },
      );
      return { id: payout.id };
    },

    verifyWebhook(rawBody, signature) {
      if (!signature) throw new WebhookSignatureError('No Stripe-Signature header');
      try {
        return stripe.webhooks.constructEvent(rawBody, signature, options.webhookSecret, WEBHOOK_TOLERANCE_SECONDS) as unknown as ProcessorEvent;
      } catch (error) {
        throw new WebhookSignatureError(error instanceof Error ? error.message : 'Invalid signature');
      }
    },
  };
}
