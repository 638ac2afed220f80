/**
 * The payment processor (DESIGN.md §7): Stripe through its SDK when STRIPE_SECRET_KEY is set, or
 * the built-in processor that walks the same states offline. Both speak Stripe's webhook format
 * (`Stripe-Signature` over the raw body), so the webhook route is the same for both.
 */

/** A PaymentIntent's state in the words of our payment machine. */
export type IntentStatus = 'requires_payment' | 'processing' | 'succeeded' | 'failed' | 'canceled';

export interface Intent {
  id: string;
  status: IntentStatus;
  amountCents: number;
  currency: string;
  clientSecret: string;
  /** The charge behind a successful intent (refunds and disputes name it). */
  chargeId: string | null;
  failureReason: string | null;
}

export interface ProcessorAccount {
  id: string;
  chargesEnabled: boolean;
  payoutsEnabled: boolean;
  detailsSubmitted: boolean;
  /** Outstanding requirements (`requirements.currently_due`). */
  requirements: string[];
}

/** A verified webhook event, in Stripe's shape. */
export interface ProcessorEvent {
  id: string;
  type: string;
  /** The connected account an event of a connected account is about (payouts). */
  account?: string | null;
  created: number;
  data: { object: Record<string, unknown> };
}

/** Thrown when a webhook's signature does not verify: the route answers 400. */
export class WebhookSignatureError extends Error {}

export interface PaymentProcessor {
  readonly kind: 'stripe' | 'builtin';
  createPaymentIntent(input: {
    amountCents: number;
    currency: string;
    transferGroup: string;
    metadata: Record<string, string>;
    idempotencyKey: string;
  }): Promise<Intent>;
  retrievePaymentIntent(id: string): Promise<Intent>;
  /** Changes the amount of an unpaid intent (the final price moved since it was created). */
  updatePaymentIntentAmount(id: string, amountCents: number, idempotencyKey: string): Promise<Intent>;
  refund(input: { intentId: string; amountCents: number; reason: string; idempotencyKey: string }): Promise<{ id: string }>;
  createAccount(input: { email: string; idempotencyKey: string }): Promise<ProcessorAccount>;
  retrieveAccount(id: string): Promise<ProcessorAccount>;
  createAccountLink(input: { accountId: string; returnUrl: string; refreshUrl: string }): Promise<{ url: string; expiresAt: Date }>;
  setBankAccount(input: { accountId: string; iban: string; holderName: string; idempotencyKey: string }): Promise<{ id: string; last4: string }>;
  createTransfer(input: {
    amountCents: number;
    currency: string;
    destination: string;
    transferGroup: string;
    sourceCharge: string | null;
    idempotencyKey: string;
  }): Promise<{ id: string }>;
  reverseTransfer(input: { transferId: string; amountCents: number; idempotencyKey: string }): Promise<{ id: string }>;
  /** The connected account's available balance in `currency`, in cents. */
  availableBalance(accountId: string, currency: string): Promise<number>;
  createPayout(input: { accountId: string; amountCents: number; currency: string; idempotencyKey: string }): Promise<{ id: string }>;
  /** Verifies a delivery's `Stripe-Signature` over its raw body (300 s tolerance); throws WebhookSignatureError. */
  verifyWebhook(rawBody: Buffer, signature: string | undefined): ProcessorEvent;
}

/** The processor with no network: `simulate` stands in for the card confirmation (DESIGN.md §6). */
export interface BuiltinPaymentProcessor extends PaymentProcessor {
  readonly kind: 'builtin';
  /** Settles an intent as the card would, and answers the signed webhook deliveries that follow. */
  simulate(intentId: string, outcome: 'succeeded' | 'failed'): Promise<{ payload: string; signature: string }[]>;
  /** The deliveries its other changes produced since the last call (a refund, a transfer, a payout), signed now. */
  takeEvents(): { payload: string; signature: string }[];
}

/** How long a webhook's timestamp stays acceptable (Stripe's default). */
export const WEBHOOK_TOLERANCE_SECONDS = 300;

export function isBuiltin(p: PaymentProcessor): p is BuiltinPaymentProcessor {
  return p.kind === 'builtin';
}
