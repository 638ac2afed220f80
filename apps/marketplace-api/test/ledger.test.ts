import { eq } from 'drizzle-orm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerEntries, moneyMoves, notifications, paymentTransfers, payments } from '../src/db/schema/index.js';
import { createBuiltinProcessor } from '../src/integrations/payments/index.js';
import { shareFor, shareReversedFor } from '../src/modules/payments/commission.js';
import { nonAdminTokens } from './admin-lifecycle-fixtures.js';
import { buildTestApp, createAdmin, createClient, createPrestataire, expectAdminOnly, expectError, type NonAdminTokens, type TestApp, type TestUser } from './helpers.js';
import { deliverAll } from './outbox-helpers.js';
import { paymentsFixtures, WEBHOOK_SECRET } from './payments-fixtures.js';

let t: TestApp;
let admin: TestUser;
let client: TestUser;
let prestataire: TestUser;
let tokens: NonAdminTokens;
const processor = createBuiltinProcessor({ webhookSecret: WEBHOOK_SECRET });
const px = paymentsFixtures(() => t);
const { api } = px;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '1000000', RATE_LIMIT_PUBLIC: '1000000', OUTBOX_INTERVAL_MS: '0' }, { paymentProcessor: processor });
  admin = await createAdmin(t);
  client = await createClient(t);
  prestataire = await createPrestataire(t, { status: 'validated' });
  tokens = await nonAdminTokens(t);
  // The prestataire's account, able to receive transfers (the built-in processor's onboarding), with a bank account.
  expect((await api('POST', '/prestataire/psp/onboard', prestataire.token)).statusCode).toBe(200);
  expect((await api('PUT', '/prestataire/psp/iban', prestataire.token, { iban: 'FR1420041010050500013M02606' })).statusCode).toBe(200);
});
afterAll(() => t.close());

async function pay(appointmentId: number) {
  expect((await api('POST', `/appointments/${appointmentId}/payment/initiate`, client.token)).statusCode).toBe(201);
  const validated = await api('POST', `/appointments/${appointmentId}/payment/validate`, client.token, { simulate: 'succeeded' });
  expect(validated.statusCode, validated.body).toBe(200);
  return validated.json().data as { id: number; amount_cents: number; commission_cents: number };
}

/** Every group of entries sums to zero, and each payment's books hold: charged = refunded + fee + share held + share sent. */
async function expectBalancedBooks(paymentIds: number[]) {
  const entries = await t.database.db.select().from(ledgerEntries);
  const byTransaction = new Map<string, number>();
  for (const e of entries) byTransaction.set(e.transactionId, (byTransaction.get(e.transactionId) ?? 0) + e.amountCents);
  for (const [id, sum] of byTransaction) expect(sum, id).toBe(0);
  for (const paymentId of paymentIds) {
    const [payment] = await t.database.db.select().from(payments).where(eq(payments.id, paymentId));
    const [transfer] = await t.database.db.select().from(paymentTransfers).where(eq(paymentTransfers.paymentId, paymentId));
    const mine = entries.filter((e) => e.paymentId === paymentId);
    const sum = (pred: (account: string) => boolean) => mine.filter((e) => pred(e.account)).reduce((s, e) => s + e.amountCents, 0);
    const charged = -sum((a) => a.startsWith('client:'));
    const refunded = sum((a) => a === 'refunds');
    const fees = sum((a) => a === 'platform:fees');
    const held = sum((a) => a.endsWith(':held'));
    const sent = sum((a) => a.endsWith(':payable'));
    expect(charged).toBe(payment!.amountCents);
    expect(refunded).toBe(payment!.refundedCents);
    expect(charged).toBe(refunded + fees + held + sent);
    // The share the prestataire keeps is its share of what was not refunded, wherever it sits.
    const share = shareFor(payment!.amountCents, payment!.commissionCents);
    expect(held + sent).toBe(share - shareReversedFor(share, payment!.amountCents, payment!.refundedCents));
    // Sent shares agree with the transfer row; a completed appointment leaves nothing held.
    expect(sent).toBe(transfer && transfer.status !== 'held' ? transfer.amountCents - transfer.reversedCents : 0);
    if (transfer && transfer.status !== 'held') expect(held).toBe(0);
  }
}

describe('the ledger', () => {
  it('posts the charge, a refund, the transfer, its reversal and a payout as balanced groups, shown to administrators', async () => {
    const a = await px.appointment(client, prestataire, { priceCents: 20_000 });
    const payment = await pay(a.id);
    await px.complete(a.id);
    const refunded = await api('POST', `/admin/payments/${payment.id}/refund`, admin.token, { amount_cents: 5_000, reason: 'Goodwill' });
    expect(refunded.statusCode, refunded.body).toBe(200);
    expect(refunded.json().data.refund).toMatchObject({ kind: 'refund', status: 'succeeded', amount_cents: 5_000, attempt: 1 });
    await expectBalancedBooks([payment.id]);
    // The client hears of the partial refund.
    await deliverAll(t, ['notifications']);
    const inbox = await t.database.db.select().from(notifications).where(eq(notifications.userId, client.user.id));
    expect(inbox.map((n) => n.title)).toContain('Remboursement partiel');

    const res = await api('GET', `/admin/ledger?payment_id=${payment.id}`, admin.token);
    expect(res.statusCode, res.body).toBe(200);
    const kinds = res.json().data.map((e: { kind: string }) => e.kind);
    expect(new Set(kinds)).toEqual(new Set(['charge', 'refund', 'transfer', 'reversal']));
    // 20 000 charged, 10 % fee: 18 000 share; a quarter refunded takes back 4 500 of it and 500 of the fee.
    expect(res.json().meta.totals).toEqual({
      [`client:${client.user.id}`]: -20_000,
      'platform:fees': 1_500,
      refunds: 5_000,
      [`prestataire:${prestataire.user.id}:held`]: 0,
      [`prestataire:${prestataire.user.id}:payable`]: 13_500,
    });

    const payout = await api('POST', '/prestataire/retrait', prestataire.token);
    expect(payout.statusCode, payout.body).toBe(201);
    const mine = (await api('GET', `/admin/ledger?prestataire_id=${prestataire.user.id}&per_page=500`, admin.token)).json().meta.totals;
    expect(mine[`prestataire:${prestataire.user.id}:payable`]).toBe(0);
    expect(mine[`prestataire:${prestataire.user.id}:paid_out`]).toBe(payout.json().data.amount_cents);

    const movesRes = await api('GET', `/admin/payments/${payment.id}/money-moves`, admin.token);
    expect(movesRes.json().data.map((m: { kind: string; status: string }) => `${m.kind}:${m.status}`)).toEqual(['transfer:succeeded', 'refund:succeeded', 'reversal:succeeded']);
    expectError(await api('GET', '/admin/payments/999999/money-moves', admin.token), 404, 'not_found');
    await expectAdminOnly(t, tokens, 'GET', '/admin/ledger');
    await expectAdminOnly(t, tokens, 'GET', `/admin/payments/${payment.id}/money-moves`);
  });

  it('a second refund while one is on its way answers 409 at once; a refund is asked of the processor once', async () => {
    const a = await px.appointment(client, prestataire, { priceCents: 9_000 });
    const payment = await pay(a.id);
    // A refund committed but not yet made (as when its instance stopped before calling the processor).
    await t.database.db.insert(moneyMoves).values({ kind: 'refund', paymentId: payment.id, prestataireId: prestataire.user.id, amountCents: 1_000, reason: 'first', nextAttemptAt: new Date(Date.now() + 60_000) });
    const second = await api('POST', `/admin/payments/${payment.id}/refund`, admin.token, { amount_cents: 1_000, reason: 'second' });
    expectError(second, 409, 'conflict');
    expect(second.json().current_status).toBe('refund_in_progress');
    // The worker makes it once it is due.
    await t.database.db.update(moneyMoves).set({ nextAttemptAt: new Date(), idempotencyKey: 'refund-first-1' }).where(eq(moneyMoves.paymentId, payment.id));
    await px.moves();
    const [row] = await t.database.db.select().from(payments).where(eq(payments.id, payment.id));
    expect(row).toMatchObject({ refundedCents: 1_000, status: 'partially_refunded' });
    await px.moves();
    expect((await t.database.db.select().from(payments).where(eq(payments.id, payment.id)))[0]!.refundedCents).toBe(1_000);
    await expectBalancedBooks([payment.id]);
  });

  it('balances to the cent over random journeys of charges, refunds before and after completion, and payouts', async () => {
    const paid: number[] = [];
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 500, max: 500_000 }),
        fc.array(fc.record({ before: fc.boolean(), share: fc.integer({ min: 1, max: 60 }) }), { maxLength: 3 }),
        fc.boolean(),
        fc.boolean(),
        async (price, refunds, complete, payout) => {
          const a = await px.appointment(client, prestataire, { priceCents: price });
          const payment = await pay(a.id);
          paid.push(payment.id);
          let left = price;
          const refund = async (share: number) => {
            const amount = Math.max(1, Math.floor((left * share) / 100));
            if (left <= 0) return;
            const res = await api('POST', `/admin/payments/${payment.id}/refund`, admin.token, { amount_cents: amount, reason: 'property' });
            expect(res.statusCode, res.body).toBe(200);
            left -= amount;
          };
          for (const r of refunds.filter((x) => x.before)) await refund(r.share);
          if (complete) await px.complete(a.id);
          for (const r of refunds.filter((x) => !x.before)) await refund(r.share);
          await px.moves();
          if (payout) {
            const res = await api('POST', '/prestataire/retrait', prestataire.token);
            expect([201, 409]).toContain(res.statusCode);
          }
          await expectBalancedBooks([payment.id]);
        },
      ),
      { numRuns: 12 },
    );
    await expectBalancedBooks(paid);
  });
});
