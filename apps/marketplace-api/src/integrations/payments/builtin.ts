import { createHmac, randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import {
  WEBHOOK_TOLERANCE_SECONDS,
  WebhookSignatureError,
  type BuiltinPaymentProcessor,
  type Intent,
  type ProcessorAccount,
  type ProcessorEvent,
} from './processor.js';

interface BuiltinAccount extends ProcessorAccount {
  bankAccount: string | null;
  /** Available balance in cents, one currency (EUR). */
  balance: number;
}

interface BuiltinTransfer {
  id: string;
  amount: number;
  reversed: number;
  destination: string;
  group: string;
}

/**
 * A processor held in memory that moves the same states as Stripe, with no network: intents settle
 * through `simulate` (the card confirmation), and every change it makes emits a webhook event in
 * Stripe's format, signed with the webhook secret. The service delivers those events to the same
 * webhook handler as Stripe's, so the money path is the same code offline.
 */
export function createBuiltinProcessor(options: { webhookSecret?: string } = {}): BuiltinPaymentProcessor & {
  /** The webhook secret deliveries are signed with (random per process unless configured). */
  readonly webhookSecret: string;
} {
  const secret = options.webhookSecret ?? `whsec_builtin_${randomBytes(24).toString('hex')}`;
  // Only the SDK's webhook helper is used: it verifies the same header format as for Stripe itself.
  const verifier = new Stripe('sk_builtin_offline', { telemetry: false });
  const intents = new Map<string, Intent & { refunded: number }>();
  const accounts = new Map<string, BuiltinAccount>();
  const transfers = new Map<string, BuiltinTransfer>();
  const idempotent = new Map<string, unknown>();
  // Unsigned until delivered: a signature is dated, and the webhook refuses one older than 300 s.
  const queue: string[] = [];
  let counter = 0;

  const newId = (prefix: string) => `${prefix}_builtin_${Date.now().toString(36)}${(++counter).toString(36)}${randomBytes(4).toString('hex')}`;

  /** The same key answers the first call's result, as Stripe's idempotency keys do. */
  async function once<T>(key: string, make: () => T | Promise<T>): Promise<T> {
    if (idempotent.has(key)) return idempotent.get(key) as T;
    const value = await make();
    idempotent.set(key, value);
    return value;
  }

  function sign(payload: string): string {
    const t = Math.floor(Date.now() / 1000);
    const v1 = createHmac('sha256', secret).update(`${t}.${payload}`).digest('hex');
    return `t=${t},v1=${v1}`;
  }

  function emit(type: string, object: Record<string, unknown>, account?: string) {
    const event = { id: newId('evt'), object: 'event', type, created: Math.floor(Date.now() / 1000), account: account ?? null, data: { object } };
    queue.push(JSON.stringify(event));
  }

  function take() {
    return queue.splice(0, queue.length).map((payload) => ({ payload, signature: sign(payload) }));
  }

  function intentObject(i: Intent & { refunded: number }) {
    const status = { requires_payment: 'requires_payment_method', failed: 'requires_payment_method' }[i.status as string] ?? i.status;
    return {
      id: i.id,
      object: 'payment_intent',
      amount: i.amountCents,
      currency: i.currency.toLowerCase(),
      status,
      latest_charge: i.chargeId,
      last_payment_error: i.failureReason ? { message: i.failureReason } : null,
    };
  }

  function accountObject(a: BuiltinAccount) {
    return {
      id: a.id,
      object: 'account',
      charges_enabled: a.chargesEnabled,
      payouts_enabled: a.payoutsEnabled,
      details_submitted: a.detailsSubmitted,
      requirements: { currently_due: a.requirements },
    };
  }

  function getIntent(id: string) {
    const intent = intents.get(id);
    if (!intent) throw new Error(`No such payment_intent: ${id}`);
    return intent;
  }

  function getAccount(id: string) {
    const account = accounts.get(id);
    if (!account) throw new Error(`No such account: ${id}`);
    return account;
  }

  const view = (i: Intent & { refunded: number }): Intent => ({ ...i });
  const accountView = (a: BuiltinAccount): ProcessorAccount => ({
    id: a.id,
    chargesEnabled: a.chargesEnabled,
    payoutsEnabled: a.payoutsEnabled,
    detailsSubmitted: a.detailsSubmitted,
    requirements: [...a.requirements],
  });

  return {
    kind: 'builtin',
    webhookSecret: secret,

    takeEvents() {
      return take();
    },

    async createPaymentIntent(input) {
      return once(input.idempotencyKey, () => {
        const id = newId('pi');
        const intent = {
          id,
          status: 'requires_payment' as const,
          amountCents: input.amountCents,
          currency: input.currency,
          clientSecret: `${id}_secret_${randomBytes(12).toString('hex')}`,
          chargeId: null,
          failureReason: null,
          refunded: 0,
        };
        intents.set(id, intent);
        return view(intent);
      });
    },

    async retrievePaymentIntent(id) {
      return view(getIntent(id));
    },

    async updatePaymentIntentAmount(id, amountCents) {
      const intent = getIntent(id);
      if (intent.status === 'succeeded' || intent.status === 'processing') throw new Error('This PaymentIntent can no longer be updated');
      intent.amountCents = amountCents;
      return view(intent);
    },

    async simulate(intentId, outcome) {
      const intent = getIntent(intentId);
      if (intent.status === 'succeeded') return [];
      intent.status = 'processing';
      emit('payment_intent.processing', intentObject(intent));
      if (outcome === 'succeeded') {
        intent.status = 'succeeded';
        intent.chargeId = newId('ch');
        intent.failureReason = null;
        emit('payment_intent.succeeded', intentObject(intent));
      } else {
        intent.status = 'failed';
        intent.failureReason = 'Your card was declined.';
        emit('payment_intent.payment_failed', intentObject(intent));
      }
      return take();
    },

    async refund(input) {
      return once(input.idempotencyKey, () => {
        const intent = getIntent(input.intentId);
        if (intent.status !== 'succeeded') throw new Error('This PaymentIntent has no successful charge to refund');
        if (intent.refunded + input.amountCents > intent.amountCents) throw new Error('Refund amount is greater than the unrefunded amount');
        intent.refunded += input.amountCents;
        const id = newId('re');
        emit('charge.refunded', {
          id: intent.chargeId,
          object: 'charge',
          payment_intent: intent.id,
          amount: intent.amountCents,
          amount_refunded: intent.refunded,
        });
        return { id };
      });
    },

    async createAccount(input) {
      return once(input.idempotencyKey, () => {
        const account: BuiltinAccount = {
          id: newId('acct'),
          chargesEnabled: false,
          payoutsEnabled: false,
          detailsSubmitted: false,
          requirements: ['business_profile.url', 'external_account'],
          bankAccount: null,
          balance: 0,
        };
        accounts.set(account.id, account);
        return accountView(account);
      });
    },

    async retrieveAccount(id) {
      return accountView(getAccount(id));
    },

    async createAccountLink(input) {
      // Offline there is no hosted form to fill in: following the link counts as having filled it.
      const account = getAccount(input.accountId);
      account.detailsSubmitted = true;
      account.chargesEnabled = true;
      account.requirements = account.requirements.filter((r) => r !== 'business_profile.url');
      emit('account.updated', accountObject(account), account.id);
      const url = new URL(input.returnUrl);
      url.searchParams.set('account', account.id);
      return { url: url.toString(), expiresAt: new Date(Date.now() + 5 * 60_000) };
    },

    async setBankAccount(input) {
      return once(input.idempotencyKey, () => {
        const account = getAccount(input.accountId);
        account.bankAccount = newId('ba');
        account.requirements = account.requirements.filter((r) => r !== 'external_account');
        account.payoutsEnabled = account.detailsSubmitted;
        emit('account.updated', accountObject(account), account.id);
        return { id: account.bankAccount, last4: input.iban.slice(-4) };
      });
    },

    async createTransfer(input) {
      return once(input.idempotencyKey, () => {
        const account = getAccount(input.destination);
        const transfer: BuiltinTransfer = { id: newId('tr'), amount: input.amountCents, reversed: 0, destination: account.id, group: input.transferGroup };
        transfers.set(transfer.id, transfer);
        account.balance += input.amountCents;
        emit('transfer.created', { id: transfer.id, object: 'transfer', amount: transfer.amount, amount_reversed: 0, destination: account.id, transfer_group: transfer.group });
        return { id: transfer.id };
      });
    },

    async reverseTransfer(input) {
      return once(input.idempotencyKey, () => {
        const transfer = transfers.get(input.transferId);
        if (!transfer) throw new Error(`No such transfer: ${input.transferId}`);
        if (transfer.reversed + input.amountCents > transfer.amount) throw new Error('Reversal amount is greater than the transfer');
        transfer.reversed += input.amountCents;
        getAccount(transfer.destination).balance -= input.amountCents;
        emit('transfer.reversed', {
          id: transfer.id,
          object: 'transfer',
          amount: transfer.amount,
          amount_reversed: transfer.reversed,
          destination: transfer.destination,
          transfer_group: transfer.group,
        });
        return { id: newId('trr') };
      });
    },

    async availableBalance(accountId) {
      return getAccount(accountId).balance;
    },

    async createPayout(input) {
      return once(input.idempotencyKey, () => {
        const account = getAccount(input.accountId);
        if (!account.bankAccount) throw new Error('No external account for payouts');
        if (input.amountCents > account.balance) throw new Error('Insufficient available balance');
        account.balance -= input.amountCents;
        const id = newId('po');
        // The bank answers at once offline.
        emit('payout.paid', { id, object: 'payout', amount: input.amountCents, currency: input.currency.toLowerCase(), status: 'paid' }, account.id);
        return { id };
      });
    },

    verifyWebhook(rawBody, signature) {
      if (!signature) throw new WebhookSignatureError('No Stripe-Signature header');
      try {
        return verifier.webhooks.constructEvent(rawBody, signature, secret, WEBHOOK_TOLERANCE_SECONDS) as unknown as ProcessorEvent;
      } catch (error) {
        throw new WebhookSignatureError(error instanceof Error ? error.message : 'Invalid signature');
      }
    },
  };
}

export type BuiltinProcessor = ReturnType<typeof createBuiltinProcessor>;
