import { createHmac, randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import {
  ProcessorError,
  WEBHOOK_TOLERANCE_SECONDS,
  WebhookSignatureError,
  type BuiltinPaymentProcessor,
  type Intent,
  type ProcessorAccount,
  type ProcessorEvent,
  type ProcessorPayout,
  type ProcessorRefund,
  type ProcessorReversal,
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
  reference: string | null;
  reversals: ProcessorReversal[];
}

/** A refusal in Stripe's words (its code and status), so both processors fail alike. */
const refused = (message: string, code: string, statusCode = 400) => new ProcessorError('refused', message, { code, statusCode });

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
  const refunds = new Map<string, ProcessorRefund[]>();
  const payouts = new Map<string, ProcessorPayout[]>();
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
      capabilities: { transfers: a.transfersEnabled ? 'active' : 'inactive' },
      requirements: { currently_due: a.requirements },
    };
  }

  function getIntent(id: string) {
    const intent = intents.get(id);
    if (!intent) throw refused(`No such payment_intent: ${id}`, 'resource_missing', 404);
    return intent;
  }

  function getAccount(id: string) {
    const account = accounts.get(id);
    if (!account) throw refused(`No such account: ${id}`, 'resource_missing', 404);
    return account;
  }

  const view = ({ refunded, ...i }: Intent & { refunded: number }): Intent => ({ ...i, amountRefundedCents: refunded });
  const accountView = (a: BuiltinAccount): ProcessorAccount => ({
    id: a.id,
    chargesEnabled: a.chargesEnabled,
    payoutsEnabled: a.payoutsEnabled,
    detailsSubmitted: a.detailsSubmitted,
    transfersEnabled: a.transfersEnabled,
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
      if (intent.status === 'succeeded' || intent.status === 'processing') throw refused('This PaymentIntent can no longer be updated', 'payment_intent_unexpected_state');
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
        if (intent.status !== 'succeeded') throw refused('This PaymentIntent has no successful charge to refund', 'payment_intent_unexpected_state');
        if (intent.refunded >= intent.amountCents) throw refused(`Charge ${intent.chargeId} has already been refunded`, 'charge_already_refunded');
        if (intent.refunded + input.amountCents > intent.amountCents) throw refused('Refund amount is greater than the unrefunded amount', 'amount_too_large');
        intent.refunded += input.amountCents;
        const id = newId('re');
        const refund: ProcessorRefund = { id, amountCents: input.amountCents, status: 'succeeded', reference: input.reference ?? null };
        refunds.set(intent.id, [...(refunds.get(intent.id) ?? []), refund]);
        emit('charge.refunded', {
          id: intent.chargeId,
          object: 'charge',
          payment_intent: intent.id,
          amount: intent.amountCents,
          amount_refunded: intent.refunded,
        });
        return { id, amountCents: refund.amountCents, status: refund.status };
      });
    },

    async createAccount(input) {
      return once(input.idempotencyKey, () => {
        const account: BuiltinAccount = {
          id: newId('acct'),
          chargesEnabled: false,
          payoutsEnabled: false,
          detailsSubmitted: false,
          transfersEnabled: false,
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
      // Stripe activates the transfers capability once the identity details are in.
      account.transfersEnabled = true;
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
        if (!account.transfersEnabled) {
          throw refused('The destination account needs the transfers capability enabled', 'insufficient_capabilities_for_transfer');
        }
        const transfer: BuiltinTransfer = {
          id: newId('tr'),
          amount: input.amountCents,
          reversed: 0,
          destination: account.id,
          group: input.transferGroup,
          reference: input.reference ?? null,
          reversals: [],
        };
        transfers.set(transfer.id, transfer);
        account.balance += input.amountCents;
        emit('transfer.created', { id: transfer.id, object: 'transfer', amount: transfer.amount, amount_reversed: 0, destination: account.id, transfer_group: transfer.group });
        return { id: transfer.id, amountCents: transfer.amount };
      });
    },

    async reverseTransfer(input) {
      return once(input.idempotencyKey, () => {
        const transfer = transfers.get(input.transferId);
        if (!transfer) throw refused(`No such transfer: ${input.transferId}`, 'resource_missing', 404);
        if (transfer.reversed + input.amountCents > transfer.amount) throw refused('Reversal amount is greater than the transfer', 'amount_too_large');
        transfer.reversed += input.amountCents;
        const reversal: ProcessorReversal = { id: newId('trr'), amountCents: input.amountCents, reference: input.reference ?? null };
        transfer.reversals.push(reversal);
        getAccount(transfer.destination).balance -= input.amountCents;
        emit('transfer.reversed', {
          id: transfer.id,
          object: 'transfer',
          amount: transfer.amount,
          amount_reversed: transfer.reversed,
          destination: transfer.destination,
          transfer_group: transfer.group,
        });
        return { id: reversal.id, amountCents: reversal.amountCents };
      });
    },

    async availableBalance(accountId) {
      return getAccount(accountId).balance;
    },

    async createPayout(input) {
      return once(input.idempotencyKey, () => {
        const account = getAccount(input.accountId);
        if (!account.bankAccount) throw refused('No external account for payouts', 'no_external_account');
        if (input.amountCents > account.balance) throw refused('Insufficient available balance', 'balance_insufficient');
        account.balance -= input.amountCents;
        const id = newId('po');
        const payout: ProcessorPayout = { id, amountCents: input.amountCents, status: 'paid', reference: input.reference ?? null };
        payouts.set(account.id, [...(payouts.get(account.id) ?? []), payout]);
        // The bank answers at once offline.
        emit('payout.paid', { id, object: 'payout', amount: input.amountCents, currency: input.currency.toLowerCase(), status: 'paid' }, account.id);
        return { id, amountCents: payout.amountCents, status: payout.status };
      });
    },

    async listRefunds(intentId) {
      getIntent(intentId);
      return (refunds.get(intentId) ?? []).map((r) => ({ ...r }));
    },

    async listTransfers(transferGroup) {
      return [...transfers.values()]
        .filter((t) => t.group === transferGroup)
        .map((t) => ({
          id: t.id,
          amountCents: t.amount,
          reversedCents: t.reversed,
          destination: t.destination,
          reference: t.reference,
          reversals: t.reversals.map((r) => ({ ...r })),
        }));
    },

    async listPayouts(accountId) {
      getAccount(accountId);
      return (payouts.get(accountId) ?? []).map((p) => ({ ...p }));
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
