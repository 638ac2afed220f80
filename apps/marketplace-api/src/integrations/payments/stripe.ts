import Stripe from 'stripe';
import {
  ProcessorError,
  redactProcessorMessage,
  WEBHOOK_TOLERANCE_SECONDS,
  WebhookSignatureError,
  type Intent,
  type IntentStatus,
  type PaymentProcessor,
  type PayoutStatus,
  type ProcessorAccount,
  type ProcessorEvent,
  type RefundStatus,
} from './processor.js';

export interface StripeProcessorOptions {
  secretKey: string;
  webhookSecret: string;
  /** Where the API is (tests point the SDK at a local server that answers as Stripe does). */
  host?: string;
  port?: number;
  protocol?: 'http' | 'https';
  /** Per attempt; the SDK makes up to 3 (maxNetworkRetries 2, same idempotency key). */
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
    // Only an expanded charge carries it.
    ...(charge && typeof charge === 'object' ? { amountRefundedCents: charge.amount_refunded } : {}),
  };
}

/** `requires_action` is a refund still waiting for the customer's bank: pending to us. */
function refundStatus(status: string | null): RefundStatus {
  return status === 'succeeded' || status === 'failed' || status === 'canceled' ? status : 'pending';
}

function payoutStatus(status: string): PayoutStatus {
  return status === 'paid' || status === 'in_transit' || status === 'failed' || status === 'canceled' ? status : 'pending';
}

const reference = (metadata: Stripe.Metadata | null | undefined) => metadata?.reference ?? null;
const withReference = (ref: string | undefined): Record<string, string> => (ref ? { reference: ref } : {});

/**
 * Stripe's failures in two kinds. Unknown or transient outcomes (the SDK's own retries with the
 * same idempotency key are spent): no answer (StripeConnectionError, timeouts included), 5xx
 * (StripeAPIError, which the SDK also raises for statuses it has no class for, 409 among them),
 * 429 (StripeRateLimitError), and a key whose first request is still executing (409
 * `idempotency_key_in_use`) or a lock timeout. Everything else is Stripe's definitive answer:
 * card errors, invalid requests (`insufficient_capabilities_for_transfer`, `balance_insufficient`…),
 * a key reused with other parameters (400 `idempotency_error`), authentication and permission.
 */
export function toProcessorError(error: unknown): ProcessorError {
  if (error instanceof ProcessorError) return error;
  if (error instanceof Stripe.errors.StripeError) {
    const statusCode = typeof error.statusCode === 'number' ? error.statusCode : null;
    const code = error.code ?? null;
    const unavailable =
      error instanceof Stripe.errors.StripeConnectionError ||
      error instanceof Stripe.errors.StripeAPIError ||
      error instanceof Stripe.errors.StripeRateLimitError ||
      code === 'idempotency_key_in_use' ||
      code === 'lock_timeout' ||
      statusCode === 409 ||
      statusCode === 429 ||
      (statusCode !== null && statusCode >= 500);
    const what = [error.type, code, statusCode].filter((p) => p !== null && p !== undefined).join(' ');
    return new ProcessorError(unavailable ? 'unavailable' : 'refused', `Stripe ${what}: ${redactProcessorMessage(error.message)}`, {
      code,
      statusCode,
      cause: error,
    });
  }
  // Not an answer of Stripe's (a failure inside the SDK): whether the call happened is unknown.
  return new ProcessorError('unavailable', `Stripe call failed: ${redactProcessorMessage(error instanceof Error ? error.message : String(error))}`, {
    cause: error,
  });
}

/** Runs a call to Stripe, its failure as a ProcessorError. */
async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw toProcessorError(error);
  }
}

function toAccount(a: Stripe.Account): ProcessorAccount {
  return {
    id: a.id,
    chargesEnabled: a.charges_enabled ?? false,
    payoutsEnabled: a.payouts_enabled ?? false,
    detailsSubmitted: a.details_submitted ?? false,
    transfersEnabled: a.capabilities?.transfers === 'active',
    requirements: a.requirements?.currently_due ?? [],
  };
}

/** The most objects one list read returns (autoPagingToArray demands a bound). */
const LIST_LIMIT = 10_000;

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

    createPaymentIntent: (input) =>
      call(async () => {
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
      }),

    // The charge expanded in the same request: its refunded amount comes at no extra call.
    retrievePaymentIntent: (id) => call(async () => toIntent(await stripe.paymentIntents.retrieve(id, { expand: ['latest_charge'] }))),

    updatePaymentIntentAmount: (id, amountCents, idempotencyKey) =>
      call(async () => toIntent(await stripe.paymentIntents.update(id, { amount: amountCents }, { idempotencyKey }))),

    refund: (input) =>
      call(async () => {
        const refund = await stripe.refunds.create(
          {
            payment_intent: input.intentId,
            amount: input.amountCents,
            metadata: { reason: input.reason.slice(0, 500), ...withReference(input.reference) },
          },
          { idempotencyKey: input.idempotencyKey },
        );
        return { id: refund.id, amountCents: refund.amount, status: refundStatus(refund.status) };
      }),

    createAccount: (input) =>
      call(async () => {
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
      }),

    retrieveAccount: (id) => call(async () => toAccount(await stripe.accounts.retrieve(id))),

    createAccountLink: (input) =>
      call(async () => {
        const link = await stripe.accountLinks.create({
          account: input.accountId,
          return_url: input.returnUrl,
          refresh_url: input.refreshUrl,
          type: 'account_onboarding',
        });
        return { url: link.url, expiresAt: new Date(link.expires_at * 1000) };
      }),

    setBankAccount: (input) =>
      call(async () => {
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
      }),

    createTransfer: (input) =>
      call(async () => {
        const transfer = await stripe.transfers.create(
          {
            amount: input.amountCents,
            currency: input.currency.toLowerCase(),
            destination: input.destination,
            transfer_group: input.transferGroup,
            ...(input.sourceCharge ? { source_transaction: input.sourceCharge } : {}),
            ...(input.reference ? { metadata: withReference(input.reference) } : {}),
          },
          { idempotencyKey: input.idempotencyKey },
        );
        return { id: transfer.id, amountCents: transfer.amount };
      }),

    reverseTransfer: (input) =>
      call(async () => {
        const reversal = await stripe.transfers.createReversal(
          input.transferId,
          { amount: input.amountCents, ...(input.reference ? { metadata: withReference(input.reference) } : {}) },
          { idempotencyKey: input.idempotencyKey },
        );
        return { id: reversal.id, amountCents: reversal.amount };
      }),

    availableBalance: (accountId, currency) =>
      call(async () => {
        const balance = await stripe.balance.retrieve({}, { stripeAccount: accountId });
        return balance.available.filter((b) => b.currency === currency.toLowerCase()).reduce((sum, b) => sum + b.amount, 0);
      }),

    createPayout: (input) =>
      call(async () => {
        const payout = await stripe.payouts.create(
          { amount: input.amountCents, currency: input.currency.toLowerCase(), ...(input.reference ? { metadata: withReference(input.reference) } : {}) },
          { stripeAccount: input.accountId, idempotencyKey: input.idempotencyKey },
        );
        return { id: payout.id, amountCents: payout.amount, status: payoutStatus(payout.status) };
      }),

    listRefunds: (intentId) =>
      call(async () => {
        const refunds = await stripe.refunds.list({ payment_intent: intentId, limit: 100 }).autoPagingToArray({ limit: LIST_LIMIT });
        return refunds.map((r) => ({ id: r.id, amountCents: r.amount, status: refundStatus(r.status), reference: reference(r.metadata) }));
      }),

    listTransfers: (transferGroup) =>
      call(async () => {
        const transfers = await stripe.transfers.list({ transfer_group: transferGroup, limit: 100 }).autoPagingToArray({ limit: LIST_LIMIT });
        return Promise.all(
          transfers.map(async (t) => {
            // A transfer carries its first reversals; the rest are read page by page.
            const reversals = t.reversals.has_more
              ? await stripe.transfers.listReversals(t.id, { limit: 100 }).autoPagingToArray({ limit: LIST_LIMIT })
              : t.reversals.data;
            return {
              id: t.id,
              amountCents: t.amount,
              reversedCents: t.amount_reversed,
              destination: typeof t.destination === 'string' ? t.destination : (t.destination?.id ?? ''),
              reference: reference(t.metadata),
              reversals: reversals.map((r) => ({ id: r.id, amountCents: r.amount, reference: reference(r.metadata) })),
            };
          }),
        );
      }),

    listPayouts: (accountId) =>
      call(async () => {
        const payouts = await stripe.payouts.list({ limit: 100 }, { stripeAccount: accountId }).autoPagingToArray({ limit: LIST_LIMIT });
        return payouts.map((p) => ({ id: p.id, amountCents: p.amount, status: payoutStatus(p.status), reference: reference(p.metadata) }));
      }),

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
