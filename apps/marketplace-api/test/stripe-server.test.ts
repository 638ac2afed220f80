import { describe, expect, it, type TestContext } from 'vitest';
import { createStripeProcessor, ProcessorError, type PaymentProcessor } from '../src/integrations/payments/index.js';
import { WEBHOOK_SECRET } from './payments-fixtures.js';
import { startStripeServer, type StripeServer } from './stripe-server.js';

// Each test has its own server: faults and counts of one never leak into another, and the tests
// run concurrently (the SDK's retries wait 0.5 s and more).
async function setup(ctx: TestContext, opts: { timeoutMs?: number } = {}) {
  const stripe = await startStripeServer();
  ctx.onTestFinished(() => stripe.close());
  const processor = createStripeProcessor({
    secretKey: 'sk_test_local',
    webhookSecret: WEBHOOK_SECRET,
    host: '127.0.0.1',
    port: stripe.port,
    protocol: 'http',
    timeoutMs: opts.timeoutMs ?? 2_000,
  });
  return { stripe, processor };
}

/** An Express account able to receive transfers, funded by `cents` transferred to it. */
async function account(stripe: StripeServer, processor: PaymentProcessor, key: string) {
  const created = await processor.createAccount({ email: 'garage@example.test', idempotencyKey: `account-${key}` });
  stripe.enableAccount(created.id);
  return created.id;
}

async function paidIntent(stripe: StripeServer, processor: PaymentProcessor, amountCents: number, key: string) {
  const intent = await processor.createPaymentIntent({ amountCents, currency: 'EUR', transferGroup: `group_${key}`, metadata: {}, idempotencyKey: `payment-${key}` });
  stripe.succeedIntent(intent.id);
  return intent.id;
}

async function failure(promise: Promise<unknown>): Promise<ProcessorError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProcessorError);
  return error as ProcessorError;
}

describe.concurrent('the Stripe test server through the stripe SDK', () => {
  it('executes a request whose answer was lost once: the SDK retries with the same key and gets the saved answer', async (ctx) => {
    const { stripe, processor } = await setup(ctx);
    const acct = await account(stripe, processor, 'lost');
    stripe.faults.loseNext('POST /v1/transfers');
    const transfer = await processor.createTransfer({
      amountCents: 2_500,
      currency: 'EUR',
      destination: acct,
      transferGroup: 'group_lost',
      sourceCharge: null,
      idempotencyKey: 'transfer-1-1',
      reference: 'transfer-1-1',
    });
    expect(transfer).toMatchObject({ amountCents: 2_500 });
    const posts = stripe.requests.filter((r) => r.method === 'POST' && r.path === '/v1/transfers');
    expect(posts.map((r) => r.idempotencyKey)).toEqual(['transfer-1-1', 'transfer-1-1']);
    expect(stripe.faults.stats).toMatchObject({ lost: 1, replayed: 1 });
    expect(stripe.transfers.size).toBe(1);
    expect(stripe.ledgerView().accounts[acct]).toMatchObject({ transferred: 2_500, balance: 2_500 });
  });

  it('answers 500 without executing; the retry executes once', async (ctx) => {
    const { stripe, processor } = await setup(ctx);
    const intentId = await paidIntent(stripe, processor, 10_000, '500');
    stripe.faults.failNext('POST /v1/refunds', 500);
    const refund = await processor.refund({ intentId, amountCents: 4_000, reason: 'Scratch', idempotencyKey: 'refund-1-1', reference: 'refund-1-1' });
    expect(refund).toMatchObject({ amountCents: 4_000, status: 'succeeded' });
    expect(stripe.faults.stats).toMatchObject({ errors: 1, replayed: 0 });
    expect(await processor.listRefunds(intentId)).toEqual([{ id: refund.id, amountCents: 4_000, status: 'succeeded', reference: 'refund-1-1' }]);
    expect(await processor.retrievePaymentIntent(intentId)).toMatchObject({ status: 'succeeded', amountRefundedCents: 4_000 });
  });

  it('refuses a transfer to an account without the transfers capability, and keeps that answer under its key', async (ctx) => {
    const { stripe, processor } = await setup(ctx);
    const created = await processor.createAccount({ email: 'garage@example.test', idempotencyKey: 'account-refused' });
    expect(created).toMatchObject({ transfersEnabled: false });
    const input = { amountCents: 1_000, currency: 'EUR', destination: created.id, transferGroup: 'group_r', sourceCharge: null, idempotencyKey: 'transfer-2-1' };
    const refused = await failure(processor.createTransfer(input));
    expect(refused).toMatchObject({ kind: 'refused', code: 'insufficient_capabilities_for_transfer', statusCode: 400 });
    expect(refused.message).not.toContain('garage@');

    stripe.enableAccount(created.id);
    expect(await processor.retrieveAccount(created.id)).toMatchObject({ transfersEnabled: true, payoutsEnabled: true });
    // The same key answers the same refusal (it executed); a new attempt has a new key.
    expect(await failure(processor.createTransfer(input))).toMatchObject({ kind: 'refused', code: 'insufficient_capabilities_for_transfer' });
    expect(stripe.faults.stats.replayed).toBe(1);
    expect(await processor.createTransfer({ ...input, idempotencyKey: 'transfer-2-2' })).toMatchObject({ amountCents: 1_000 });
    // The same key with other parameters is refused too.
    expect(await failure(processor.createTransfer({ ...input, amountCents: 999, idempotencyKey: 'transfer-2-2' }))).toMatchObject({
      kind: 'refused',
      code: 'idempotency_error',
      statusCode: 400,
    });
  });

  it('is unavailable while an endpoint is down, after the SDK spent its retries', async (ctx) => {
    const { stripe, processor } = await setup(ctx);
    const acct = await account(stripe, processor, 'down');
    stripe.faults.down('/v1/payouts', 10_000);
    const error = await failure(processor.createPayout({ accountId: acct, amountCents: 100, currency: 'EUR', idempotencyKey: 'payout-1-1' }));
    expect(error).toMatchObject({ kind: 'unavailable', statusCode: 503 });
    expect(stripe.faults.stats.down).toBe(3);
    expect(stripe.faults.stats.executed).toBe(1); // the account, and no payout
  });

  it('is unavailable when a request outlives the timeout and its key is still executing; the same key later answers what was done', async (ctx) => {
    const { stripe, processor } = await setup(ctx, { timeoutMs: 100 });
    const acct = await account(stripe, processor, 'hang');
    stripe.faults.hangNext('POST /v1/transfers', 3_000);
    const input = { amountCents: 700, currency: 'EUR', destination: acct, transferGroup: 'group_h', sourceCharge: null, idempotencyKey: 'transfer-3-1' };
    const error = await failure(processor.createTransfer(input));
    expect(error.kind).toBe('unavailable');
    expect(stripe.faults.stats).toMatchObject({ hung: 1, keyInUse: 2 });
    expect(error).toMatchObject({ code: 'idempotency_key_in_use', statusCode: 409 });
    await ctx.expect.poll(() => stripe.transfers.size, { timeout: 4_000 }).toBe(1);
    const again = await processor.createTransfer(input);
    expect(again.id).toBe([...stripe.transfers.keys()][0]);
    expect(stripe.transfers.size).toBe(1);
  });

  it('lists refunds, transfers with every reversal, and payouts, with their references', async (ctx) => {
    const { stripe, processor } = await setup(ctx);
    const acct = await account(stripe, processor, 'lists');
    const intentId = await paidIntent(stripe, processor, 20_000, 'lists');
    await processor.refund({ intentId, amountCents: 1_000, reason: 'r', idempotencyKey: 'refund-7-1', reference: 'refund-7-1' });
    await processor.refund({ intentId, amountCents: 2_000, reason: 'r', idempotencyKey: 'refund-8-1' });
    const tooMuch = await failure(processor.refund({ intentId, amountCents: 20_000, reason: 'r', idempotencyKey: 'refund-9-1' }));
    expect(tooMuch).toMatchObject({ kind: 'refused', code: 'amount_too_large' });
    expect((await processor.listRefunds(intentId)).map((r) => [r.amountCents, r.reference])).toEqual([
      [2_000, null],
      [1_000, 'refund-7-1'],
    ]);

    const transfer = await processor.createTransfer({
      amountCents: 12_000,
      currency: 'EUR',
      destination: acct,
      transferGroup: 'group_lists',
      sourceCharge: null,
      idempotencyKey: 'transfer-4-1',
      reference: 'transfer-4-1',
    });
    // Eleven reversals: more than a transfer carries, so the rest are read page by page.
    for (let i = 1; i <= 11; i++) {
      await processor.reverseTransfer({ transferId: transfer.id, amountCents: 100, idempotencyKey: `reversal-${i}-1`, reference: `reversal-${i}-1` });
    }
    const [listed, ...others] = await processor.listTransfers('group_lists');
    expect(others).toEqual([]);
    expect(listed).toMatchObject({ id: transfer.id, amountCents: 12_000, reversedCents: 1_100, destination: acct, reference: 'transfer-4-1' });
    expect(listed!.reversals.map((r) => r.reference).sort()).toEqual(Array.from({ length: 11 }, (_, i) => `reversal-${i + 1}-1`).sort());
    expect(await processor.listTransfers('group_other')).toEqual([]);

    const payout = await processor.createPayout({ accountId: acct, amountCents: 5_000, currency: 'EUR', idempotencyKey: 'payout-5-1', reference: 'payout-5-1' });
    expect(payout).toMatchObject({ amountCents: 5_000, status: 'pending' });
    expect(await failure(processor.createPayout({ accountId: acct, amountCents: 99_000, currency: 'EUR', idempotencyKey: 'payout-6-1' }))).toMatchObject({
      kind: 'refused',
      code: 'balance_insufficient',
    });
    expect(stripe.settlePayouts()).toBe(1);
    expect(await processor.listPayouts(acct)).toEqual([{ id: payout.id, amountCents: 5_000, status: 'paid', reference: 'payout-5-1' }]);

    expect(stripe.ledgerView()).toMatchObject({
      intents: { [intentId]: { captured: 20_000, refunded: 3_000 } },
      transferGroups: { group_lists: { transferred: 12_000, reversed: 1_100 } },
      accounts: { [acct]: { transferred: 12_000, reversed: 1_100, paidOut: 5_000, pendingPayouts: 0, balance: 12_000 - 1_100 - 5_000 } },
    });
  });

  it('emits an event for every change and delivers each twice, shuffled, each signature verifying', async (ctx) => {
    const { stripe, processor } = await setup(ctx);
    const acct = await account(stripe, processor, 'events');
    const intentId = await paidIntent(stripe, processor, 3_000, 'events');
    await processor.refund({ intentId, amountCents: 500, reason: 'r', idempotencyKey: 'refund-e-1' });
    const transfer = await processor.createTransfer({ amountCents: 2_000, currency: 'EUR', destination: acct, transferGroup: 'g', sourceCharge: null, idempotencyKey: 'transfer-e-1' });
    await processor.reverseTransfer({ transferId: transfer.id, amountCents: 300, idempotencyKey: 'reversal-e-1' });
    await processor.createPayout({ accountId: acct, amountCents: 1_000, currency: 'EUR', idempotencyKey: 'payout-e-1' });
    stripe.settlePayouts();
    const emitted = stripe.events.map((e) => e.type);
    expect(emitted).toEqual([
      'account.updated',
      'payment_intent.created',
      'payment_intent.succeeded',
      'charge.refunded',
      'transfer.created',
      'transfer.reversed',
      'payout.created',
      'payout.paid',
    ]);
    const refunded = stripe.events.find((e) => e.type === 'charge.refunded')!;
    expect(refunded).toMatchObject({ data: { object: { object: 'charge', payment_intent: intentId, amount_refunded: 500 } } });
    expect(stripe.events.find((e) => e.type === 'transfer.reversed')).toMatchObject({ data: { object: { amount_reversed: 300 } } });
    expect(stripe.events.find((e) => e.type === 'payout.paid')).toMatchObject({ account: acct, data: { object: { status: 'paid' } } });

    const ids = stripe.events.map((e) => e.id as string);
    const received: string[] = [];
    const results = await stripe.deliverEvents(
      async (payload, signature) => {
        const event = processor.verifyWebhook(Buffer.from(payload), signature);
        received.push(event.id);
        return 'ok';
      },
      { duplicate: 1, shuffle: true, delayMs: 20, seed: 3 },
    );
    expect(results).toHaveLength(ids.length * 2);
    expect([...received].sort()).toEqual([...ids, ...ids].sort());
    expect(received).not.toEqual(ids.flatMap((i) => [i, i]));
    expect(stripe.events).toHaveLength(0);
  });

  it('under seeded storms of errors and lost answers, each transfer exists once and the ledger view adds up', async (ctx) => {
    const { stripe, processor } = await setup(ctx);
    const acct = await account(stripe, processor, 'storm');
    stripe.faults.set({ errorRate: 0.25, lostRate: 0.25, seed: 42, paths: ['POST /v1/transfers'] });
    const inputs = Array.from({ length: 20 }, (_, i) => ({
      amountCents: 100 * (i + 1),
      currency: 'EUR',
      destination: acct,
      transferGroup: 'group_storm',
      sourceCharge: null,
      idempotencyKey: `transfer-${i}-1`,
      reference: `transfer-${i}-1`,
    }));
    const first = await Promise.allSettled(inputs.map((input) => processor.createTransfer(input)));
    for (const r of first) if (r.status === 'rejected') expect(r.reason).toMatchObject({ kind: 'unavailable' });
    expect(stripe.faults.stats.errors + stripe.faults.stats.lost).toBeGreaterThan(0);

    // The worker's recovery: the same key again, the faults gone.
    stripe.faults.clear();
    const done = await Promise.all(inputs.map((input) => processor.createTransfer(input)));
    const listed = await processor.listTransfers('group_storm');
    expect(listed).toHaveLength(20);
    expect(new Set(listed.map((t) => t.reference)).size).toBe(20);
    for (const t of done) expect(listed.find((l) => l.id === t.id)).toBeDefined();
    const total = inputs.reduce((sum, i) => sum + i.amountCents, 0);
    expect(stripe.ledgerView()).toMatchObject({ transferGroups: { group_storm: { transferred: total, reversed: 0 } }, accounts: { [acct]: { balance: total } } });
  });
});
