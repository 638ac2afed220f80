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
  /** What has been refunded of its charge, when the processor answers it with the intent. */
  amountRefundedCents?: number;
}

export interface ProcessorAccount {
  id: string;
  chargesEnabled: boolean;
  payoutsEnabled: boolean;
  detailsSubmitted: boolean;
  /** Whether transfers to it are accepted (Stripe: the `transfers` capability is `active`). */
  transfersEnabled: boolean;
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

export type RefundStatus = 'succeeded' | 'pending' | 'failed' | 'canceled';
export type PayoutStatus = 'pending' | 'in_transit' | 'paid' | 'failed' | 'canceled';

/** A refund as the processor knows it; `reference` is the one our money move gave it. */
export interface ProcessorRefund {
  id: string;
  amountCents: number;
  status: RefundStatus;
  reference: string | null;
}

export interface ProcessorReversal {
  id: string;
  amountCents: number;
  reference: string | null;
}

export interface ProcessorTransfer {
  id: string;
  amountCents: number;
  reversedCents: number;
  destination: string;
  reference: string | null;
  reversals: ProcessorReversal[];
}

export interface ProcessorPayout {
  id: string;
  amountCents: number;
  status: PayoutStatus;
  reference: string | null;
}

/**
 * Every failed processor call throws this. `refused` is a definitive answer: the same request will
 * get it again (a card declined, an account unable to receive transfers, insufficient funds, a key
 * reused with other parameters). `unavailable` means the outcome is unknown or transient (network,
 * timeout, 5xx, rate limit, the same key still executing): the move may or may not have happened,
 * so it is re-read or retried with the same key. The message carries ids and codes, never personal data.
 */
export class ProcessorError extends Error {
  override readonly name = 'ProcessorError';
  readonly kind: 'refused' | 'unavailable';
  /** The processor's error code (`insufficient_capabilities_for_transfer`, `idempotency_key_in_use`, …). */
  readonly code: string | null;
  /** The HTTP status of the answer; null when none came (network error, timeout). */
  readonly statusCode: number | null;

  constructor(kind: 'refused' | 'unavailable', message: string, opts: { code?: string | null; statusCode?: number | null; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.kind = kind;
    this.code = opts.code ?? null;
    this.statusCode = opts.statusCode ?? null;
  }
}

/** Removes what could name a person from a processor's message: e-mail addresses, IBANs, card-like numbers. */
export function redactProcessorMessage(message: string): string {
  return message
    .replace(/[^\s@'"]+@[^\s@'"]+\.[^\s@'"]+/g, '[email]')
    .replace(/\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){10,30}\b/g, '[iban]')
    .replace(/\b\d(?:[ -]?\d){11,18}\b/g, '[number]');
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
  /** Also reports what has been refunded of its charge (`amountRefundedCents`), read in the same call. */
  retrievePaymentIntent(id: string): Promise<Intent>;
  /** Changes the amount of an unpaid intent (the final price moved since it was created). */
  updatePaymentIntentAmount(id: string, amountCents: number, idempotencyKey: string): Promise<Intent>;
  refund(input: {
    intentId: string;
    amountCents: number;
    reason: string;
    idempotencyKey: string;
    /** Kept on the refund (`metadata[reference]`) so the move that made it finds it again. */
    reference?: string;
  }): Promise<{ id: string; amountCents: number; status: RefundStatus }>;
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
    reference?: string;
  }): Promise<{ id: string; amountCents: number }>;
  reverseTransfer(input: { transferId: string; amountCents: number; idempotencyKey: string; reference?: string }): Promise<{ id: string; amountCents: number }>;
  /** The connected account's available balance in `currency`, in cents. */
  availableBalance(accountId: string, currency: string): Promise<number>;
  createPayout(input: {
    accountId: string;
    amountCents: number;
    currency: string;
    idempotencyKey: string;
    reference?: string;
  }): Promise<{ id: string; amountCents: number; status: PayoutStatus }>;
  /** The refunds of an intent's charges, every page (reconciliation and recovery of a refund move). */
  listRefunds(intentId: string): Promise<ProcessorRefund[]>;
  /** The transfers of a transfer group with their reversals, every page. */
  listTransfers(transferGroup: string): Promise<ProcessorTransfer[]>;
  /** The payouts of a connected account, every page. */
  listPayouts(accountId: string): Promise<ProcessorPayout[]>;
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
