import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerEntries, moneyMoves, paymentTransfers, payments } from '../src/db/schema/index.js';
import { buildTestApp, createAdmin, createClient, createPrestataire, expectError, type TestApp, type TestUser } from './helpers.js';
import { paymentsFixtures, stripeTestEnv } from './payments-fixtures.js';
import { startStripeServer, type StripeServer } from './stripe-server.js';

/**
 * The money path against a processor that fails: the real stripe SDK pointed at a local server
 * speaking Stripe's API, made to answer 5xx, lose answers after doing the work, hang, go down, and
 * deliver its webhooks twice and out of order. Nothing is done twice at the processor, nothing is
 * left stranded, and the ledger equals the processor's view.
 */
let t: TestApp;
let stripe: StripeServer;
let admin: TestUser;
let client: TestUser;
let prestataire: TestUser;
let accountId: string;
const px = paymentsFixtures(() => t);
const { api } = px;

const deliverEvents = (opts: { duplicate?: number; shuffle?: boolean; seed?: number } = {}) =>
  stripe.deliverEvents((payload, signature) => px.deliver({ payload, signature }), opts);

/** Drives the money moves until none waits (a move retrying waits for its backoff: at most ~1.3 s here). */
async function settle() {
  for (let round = 0; round < 40; round++) {
    await deliverEvents();
    await px.moves();
    const live = await t.database.db.select({ id: moneyMoves.id, status: moneyMoves.status }).from(moneyMoves);
    if (live.every((m) => m.status === 'succeeded' || m.status === 'failed')) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error('money moves never settled');
}

async function paid(priceCents: number, who = prestataire) {
  const a = await px.appointment(client, who, { priceCents });
  const res = await api('POST', `/appointments/${a.id}/payment/initiate`, client.token);
  expect(res.statusCode, res.body).toBe(201);
  const [row] = await t.database.db.select().from(payments).where(eq(payments.id, res.json().data.payment.id));
  stripe.succeedIntent(row!.intentId);
  await deliverEvents();
  return { appointment: a, payment: (await t.database.db.select().from(payments).where(eq(payments.id, row!.id)))[0]! };
}

const posts = (path: string) => stripe.requests.filter((r) => r.method === 'POST' && r.path === path).length;

beforeAll(async () => {
  stripe = await startStripeServer();
  t = await buildTestApp({
    RATE_LIMIT_AUTHENTICATED: '1000000',
    RATE_LIMIT_PUBLIC: '1000000',
    OUTBOX_INTERVAL_MS: '0',
    ...stripeTestEnv(stripe.port),
  });
  admin = await createAdmin(t);
  client = await createClient(t);
  prestataire = await createPrestataire(t, { status: 'validated' });
  const onboard = await api('POST', '/prestataire/psp/onboard', prestataire.token);
  accountId = onboard.json().data.account.account_id as string;
  stripe.enableAccount(accountId);
  expect((await api('PUT', '/prestataire/psp/iban', prestataire.token, { iban: 'DE89370400440532013000' })).statusCode).toBe(200);
  await deliverEvents();
});
afterAll(async () => {
  await t.close();
  await stripe.close();
});

describe('the processor failing', () => {
  it('while a refund hangs 8 s at the processor, reads answer at once and a second refund answers 409 at once; the first completes once', async () => {
    const { payment } = await paid(10_000);
    stripe.faults.hangNext('POST /v1/refunds', 8_000);
    const first = api('POST', `/admin/payments/${payment.id}/refund`, admin.token, { amount_cents: 1_000, reason: 'Hung' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Reads of the same payment: no lock is held while the processor is called.
    let started = Date.now();
    const moves = await api('GET', `/admin/payments/${payment.id}/money-moves`, admin.token);
    expect(moves.json().data).toEqual([expect.objectContaining({ kind: 'refund', status: 'executing', amount_cents: 1_000 })]);
    const read = await api('GET', `/admin/ledger?payment_id=${payment.id}`, admin.token);
    expect(read.statusCode).toBe(200);
    expect((await api('GET', '/payments/history', client.token)).statusCode).toBe(200);
    expect(Date.now() - started).toBeLessThan(1_000);
    started = Date.now();
    const second = await api('POST', `/admin/payments/${payment.id}/refund`, admin.token, { amount_cents: 1_000, reason: 'Again' });
    expectError(second, 409, 'conflict');
    expect(Date.now() - started).toBeLessThan(1_000);
    const done = await first;
    expect(done.statusCode, done.body).toBe(200);
    expect(done.json().data).toMatchObject({ refunded_cents: 1_000, status: 'partially_refunded' });
    await settle();
    expect(stripe.ledgerView().intents[payment.intentId]!.refunded).toBe(1_000);
  });

  it('a refund whose answer is lost is made once, and the charge.refunded that comes first does not count it twice', async () => {
    const { payment } = await paid(8_000);
    const before = posts('/v1/refunds');
    stripe.faults.loseNext('POST /v1/refunds');
    const res = await api('POST', `/admin/payments/${payment.id}/refund`, admin.token, { amount_cents: 2_000, reason: 'Lost answer' });
    // The SDK's retry with the same key got the saved answer: done, once.
    expect([200, 202]).toContain(res.statusCode);
    await deliverEvents({ duplicate: 1, shuffle: true, seed: 3 });
    await settle();
    expect(posts('/v1/refunds') - before).toBeGreaterThanOrEqual(1);
    expect(stripe.ledgerView().intents[payment.intentId]!.refunded).toBe(2_000);
    const [row] = await t.database.db.select().from(payments).where(eq(payments.id, payment.id));
    expect(row).toMatchObject({ refundedCents: 2_000, status: 'partially_refunded' });
  });

  it('a refund whose key the processor keeps a 500 under is re-read at the processor, then made once under a new key', async () => {
    const { payment } = await paid(7_000);
    stripe.faults.failSavedNext('POST /v1/refunds');
    const res = await api('POST', `/admin/payments/${payment.id}/refund`, admin.token, { amount_cents: 1_500, reason: 'Saved failure' });
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json().data.refund).toMatchObject({ status: 'retrying', attempt: 1 });
    // The worker calls again with the same key (the same saved 500) until it re-reads the processor,
    // finds no refund of this move, and starts a new attempt with a new key.
    for (let i = 0; i < 10; i++) {
      await t.database.db.update(moneyMoves).set({ nextAttemptAt: new Date(0) }).where(eq(moneyMoves.paymentId, payment.id));
      await px.moves();
      const [move] = await t.database.db.select().from(moneyMoves).where(eq(moneyMoves.paymentId, payment.id));
      if (move!.status === 'succeeded') break;
    }
    const [move] = await t.database.db.select().from(moneyMoves).where(eq(moneyMoves.paymentId, payment.id));
    expect(move).toMatchObject({ status: 'succeeded', attempt: 2, idempotencyKey: `refund-${move!.id}-2` });
    expect(stripe.ledgerView().intents[payment.intentId]!.refunded).toBe(1_500);
    expect((await t.database.db.select().from(payments).where(eq(payments.id, payment.id)))[0]).toMatchObject({ refundedCents: 1_500 });
  });

  it('a transfer refused by an outage is retried by the worker with the same key and sent once', async () => {
    const { appointment, payment } = await paid(6_000);
    stripe.faults.down('/v1/transfers', 60_000);
    await px.complete(appointment.id);
    const [waiting] = await t.database.db.select().from(moneyMoves).where(eq(moneyMoves.origin, `transfer:${payment.id}`));
    expect(waiting!.status).toBe('retrying');
    // The outage ends; the worker's next pass after the backoff (about a second) sends it.
    stripe.faults.clear();
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    await settle();
    const [transfer] = await t.database.db.select().from(paymentTransfers).where(eq(paymentTransfers.paymentId, payment.id));
    expect(transfer).toMatchObject({ status: 'paid', amountCents: 5_400 });
    expect(stripe.ledgerView().transferGroups[`appointment_${appointment.id}`]).toEqual({ transferred: 5_400, reversed: 0 });
    const keys = stripe.requests.filter((r) => r.method === 'POST' && r.path === '/v1/transfers' && r.form.transfer_group === `appointment_${appointment.id}`).map((r) => r.idempotencyKey);
    expect(new Set(keys).size).toBe(1);
  });

  it("a share held for a prestataire without an account is paid by account.updated alone, once, whatever the deliveries' order", async () => {
    const newcomer = await createPrestataire(t, { status: 'validated' });
    const { appointment, payment } = await paid(5_000, newcomer);
    await px.complete(appointment.id);
    expect((await t.database.db.select().from(paymentTransfers).where(eq(paymentTransfers.paymentId, payment.id)))[0]).toMatchObject({ status: 'held', holdReason: 'no_connected_account' });
    const account = (await api('POST', '/prestataire/psp/onboard', newcomer.token)).json().data.account.account_id as string;
    await settle();
    expect((await t.database.db.select().from(paymentTransfers).where(eq(paymentTransfers.paymentId, payment.id)))[0]).toMatchObject({ status: 'held' });
    stripe.enableAccount(account);
    await deliverEvents({ duplicate: 1, shuffle: true, seed: 9 });
    await settle();
    expect((await t.database.db.select().from(paymentTransfers).where(eq(paymentTransfers.paymentId, payment.id)))[0]).toMatchObject({ status: 'paid', amountCents: 4_500 });
    expect(stripe.ledgerView().transferGroups[`appointment_${appointment.id}`]).toEqual({ transferred: 4_500, reversed: 0 });
  });

  it('a storm of journeys with 10 % errors, 5 % lost and 5 % slow answers and webhooks twice and shuffled settles balanced and reconciled', async () => {
    stripe.faults.set({ errorRate: 0.1, lostRate: 0.05, slowRate: 0.05, slowMs: 150, seed: 17 });
    const journeys: { appointmentId: number; paymentId: number; intentId: string }[] = [];
    try {
      for (let i = 0; i < 8; i++) {
        const a = await px.appointment(client, prestataire, { priceCents: 3_000 + i * 1_111 });
        const res = await api('POST', `/appointments/${a.id}/payment/initiate`, client.token);
        if (res.statusCode !== 201) continue; // a 502 the client would retry; counted as not started
        const [row] = await t.database.db.select().from(payments).where(eq(payments.id, res.json().data.payment.id));
        stripe.succeedIntent(row!.intentId);
        journeys.push({ appointmentId: a.id, paymentId: row!.id, intentId: row!.intentId });
      }
      await deliverEvents({ duplicate: 0.5, shuffle: true, seed: 5 });
      for (const [i, j] of journeys.entries()) {
        if (i % 2 === 0) {
          const r = await api('POST', `/admin/payments/${j.paymentId}/refund`, admin.token, { amount_cents: 500, reason: 'Storm' });
          expect([200, 202, 409, 502]).toContain(r.statusCode);
        }
        await px.complete(j.appointmentId);
        await deliverEvents({ duplicate: 0.5, shuffle: true, seed: 100 + i });
      }
    } finally {
      stripe.faults.clear();
    }
    await settle();
    const view = stripe.ledgerView();
    for (const j of journeys) {
      const [payment] = await t.database.db.select().from(payments).where(eq(payments.id, j.paymentId));
      const entries = await t.database.db.select().from(ledgerEntries).where(eq(ledgerEntries.paymentId, j.paymentId));
      const sum = (pred: (account: string, kind: string) => boolean) => entries.filter((e) => pred(e.account, e.kind)).reduce((s, e) => s + e.amountCents, 0);
      expect(view.intents[j.intentId]!.refunded, `refunds of ${j.paymentId}`).toBe(payment!.refundedCents);
      expect(sum((a) => a === 'refunds')).toBe(payment!.refundedCents);
      const group = view.transferGroups[`appointment_${j.appointmentId}`] ?? { transferred: 0, reversed: 0 };
      expect(sum((a, k) => k === 'transfer' && a.endsWith(':payable')), `transfers of ${j.paymentId}`).toBe(group.transferred);
      // Captured = refunded + the platform's fee + the prestataire's share (held or sent).
      expect(-sum((a) => a.startsWith('client:'))).toBe(
        sum((a) => a === 'refunds') + sum((a) => a === 'platform:fees') + sum((a) => a.endsWith(':held')) + sum((a) => a.endsWith(':payable')),
      );
      // Nothing stranded: every completed share went out.
      expect(sum((a) => a.endsWith(':held')), `held of ${j.paymentId}`).toBe(0);
    }
    const report = await api('POST', '/admin/reconciliation/run', admin.token);
    expect(report.statusCode, report.body).toBe(200);
    expect(report.json().data.differences).toEqual([]);
    expect((await api('GET', '/admin/reconciliation', admin.token)).json().meta.total).toBe(0);
  });

  it('reconciliation flags a refund made at the processor that the ledger does not hold, and clears it once recorded', async () => {
    const { payment } = await paid(4_000);
    // Refunded behind the platform's back, its webhook not delivered.
    const refund = await fetch(`http://127.0.0.1:${stripe.port}/v1/refunds`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk_test_local', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ payment_intent: payment.intentId, amount: '700' }).toString(),
    });
    expect(refund.status).toBe(200);
    const report = (await api('POST', '/admin/reconciliation/run', admin.token)).json().data;
    expect(report.differences).toEqual([expect.objectContaining({ key: `payment:${payment.id}:refunds`, kind: 'refunds', expected_cents: 0, actual_cents: 700 })]);
    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toMatch(/^payments_unreconciled_total 1$/m);
    expectError(await api('POST', '/admin/reconciliation/run', client.token), 403, 'forbidden');
    // The webhook arrives: the ledger records it as a refund made at the processor, and the next run clears it.
    await deliverEvents();
    await settle();
    expect((await api('POST', '/admin/reconciliation/run', admin.token)).json().data.open).toBe(0);
  });
});
