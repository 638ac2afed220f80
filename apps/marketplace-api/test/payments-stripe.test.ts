import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paymentTransfers, payments, payouts } from '../src/db/schema/index.js';
import { buildTestApp, createAdmin, createClient, createPrestataire, expectError, type TestApp, type TestUser } from './helpers.js';
import { paymentsFixtures, signedDelivery, stripeEvent, stripeTestEnv } from './payments-fixtures.js';
import { startStripeServer, type StripeServer } from './stripe-server.js';

let t: TestApp;
let stripe: StripeServer;
let admin: TestUser;
let client: TestUser;
let prestataire: TestUser;
const px = paymentsFixtures(() => t);
const { api, deliver } = px;

beforeAll(async () => {
  stripe = await startStripeServer();
  t = await buildTestApp({
    RATE_LIMIT_AUTHENTICATED: '100000',
    RATE_LIMIT_PUBLIC: '100000',
    OUTBOX_INTERVAL_MS: '0',
    ...stripeTestEnv(stripe.port),
  });
  admin = await createAdmin(t);
  client = await createClient(t);
  prestataire = await createPrestataire(t, { status: 'validated' });
});
afterAll(async () => {
  await t.close();
  await stripe.close();
});

const last = (path: string) => [...stripe.requests].reverse().find((r) => r.path.startsWith(path));

describe('with the stripe SDK against a server speaking its API', () => {
  it('onboards an Express account with a link, sets the IBAN, and follows account.updated', async () => {
    const res = await api('POST', '/prestataire/psp/onboard', prestataire.token);
    expect(res.statusCode, res.body).toBe(200);
    const accountId = res.json().data.account.account_id as string;
    expect(res.json().data.url).toBe(`https://connect.stripe.test/setup/${accountId}`);
    const created = last('/v1/accounts')!;
    expect(created.form).toMatchObject({ type: 'express', country: 'FR', 'capabilities[transfers][requested]': 'true', 'settings[payouts][schedule][interval]': 'manual' });
    expect(created.idempotencyKey).toBe(`account-prestataire-${prestataire.user.id}`);
    expect(created.authorization).toBe('Bearer sk_test_local');
    expect(last('/v1/account_links')!.form).toMatchObject({ account: accountId, type: 'account_onboarding' });

    expect((await api('GET', '/prestataire/psp/status', prestataire.token)).json().data).toMatchObject({
      charges_enabled: false,
      requirements: ['external_account', 'individual.dob.day'],
    });

    const iban = await api('PUT', '/prestataire/psp/iban', prestataire.token, { iban: 'DE89370400440532013000' });
    expect(iban.statusCode, iban.body).toBe(200);
    expect(last(`/v1/accounts/${accountId}/external_accounts`)!.form).toMatchObject({
      'external_account[object]': 'bank_account',
      'external_account[account_number]': 'DE89370400440532013000',
      'external_account[currency]': 'eur',
    });
    expect(iban.json().data.iban_last4).toBe('3000');

    const updated = stripeEvent(
      'account.updated',
      { id: accountId, object: 'account', charges_enabled: true, payouts_enabled: true, details_submitted: true, requirements: { currently_due: [] } },
      { account: accountId },
    );
    expect((await deliver(signedDelivery(updated))).statusCode).toBe(200);
    stripe.enableAccount(accountId);
    expect((await api('GET', '/prestataire/psp/status', prestataire.token)).json().data).toMatchObject({ payouts_enabled: true, requirements: [] });
  });

  it('creates the PaymentIntent with an idempotency key, and settles from the webhook alone', async () => {
    const a = await px.appointment(client, prestataire, { priceCents: 30_000 });
    const res = await api('POST', `/appointments/${a.id}/payment/initiate`, client.token);
    expect(res.statusCode, res.body).toBe(201);
    const created = last('/v1/payment_intents')!;
    expect(created.form).toMatchObject({ amount: '30000', currency: 'eur', transfer_group: `appointment_${a.id}`, 'metadata[appointment_id]': String(a.id) });
    expect(created.idempotencyKey).toBe(`payment-appointment-${a.id}-30000`);
    const { payment, client_secret } = res.json().data;
    expect(client_secret).toMatch(/^secret_/);

    // With Stripe the client cannot settle its own payment.
    expectError(await api('POST', `/appointments/${a.id}/payment/validate`, client.token, { simulate: 'succeeded' }), 422, 'validation_error');
    const reread = await api('POST', `/appointments/${a.id}/payment/validate`, client.token, {});
    expect(reread.json().data.status).toBe('requires_payment');

    const [row] = await t.database.db.select().from(payments).where(eq(payments.id, payment.id));
    const pi = stripe.intents.get(row!.intentId)!;
    Object.assign(pi, { status: 'succeeded', latest_charge: 'ch_fake_1' });
    const delivery = signedDelivery(stripeEvent('payment_intent.succeeded', { ...pi }));
    const first = await deliver(delivery);
    expect(first.json()).toMatchObject({ received: true, applied: true });
    expect((await deliver(delivery)).json()).toMatchObject({ received: true, applied: false });
    const [paid] = await t.database.db.select().from(payments).where(eq(payments.id, payment.id));
    expect(paid).toMatchObject({ status: 'succeeded', chargeId: 'ch_fake_1', commissionCents: 3_000 });

    await px.complete(a.id);
    const transfer = last('/v1/transfers')!;
    expect(transfer.form).toMatchObject({
      amount: '27000',
      currency: 'eur',
      transfer_group: `appointment_${a.id}`,
      source_transaction: 'ch_fake_1',
    });
    // The key of the transfer's money move and its attempt: ids only.
    expect(transfer.idempotencyKey).toMatch(/^transfer-\d+-1$/);

    // Refund after completion: the refund and the reversal of the same proportion.
    const refund = await api('POST', `/admin/payments/${payment.id}/refund`, admin.token, { amount_cents: 10_000, reason: 'Scratch on the bumper' });
    expect(refund.statusCode, refund.body).toBe(200);
    expect(last('/v1/refunds')!.form).toMatchObject({ payment_intent: row!.intentId, amount: '10000', 'metadata[reason]': 'Scratch on the bumper' });
    const [tr] = await t.database.db.select().from(paymentTransfers).where(eq(paymentTransfers.paymentId, payment.id));
    expect(last(`/v1/transfers/${tr!.transferId}/reversals`)!.form).toMatchObject({ amount: '9000' });
    expect(tr).toMatchObject({ reversedCents: 9_000, status: 'partially_reversed' });

    // Stripe's own charge.refunded and transfer.reversed that follow change nothing more.
    const charge = stripeEvent('charge.refunded', { id: 'ch_fake_1', object: 'charge', payment_intent: row!.intentId, amount: 30_000, amount_refunded: 10_000 });
    expect((await deliver(signedDelivery(charge))).statusCode).toBe(200);
    const [after] = await t.database.db.select().from(payments).where(eq(payments.id, payment.id));
    expect(after).toMatchObject({ refundedCents: 10_000, status: 'partially_refunded' });
  });

  it('re-reads a succeeded intent on validate, and pays out the available balance on the connected account', async () => {
    const a = await px.appointment(client, prestataire, { priceCents: 5_000 });
    const { payment } = (await api('POST', `/appointments/${a.id}/payment/initiate`, client.token)).json().data;
    const [row] = await t.database.db.select().from(payments).where(eq(payments.id, payment.id));
    Object.assign(stripe.intents.get(row!.intentId)!, { status: 'succeeded', latest_charge: 'ch_fake_2' });
    const validated = await api('POST', `/appointments/${a.id}/payment/validate`, client.token, {});
    expect(validated.json().data).toMatchObject({ status: 'succeeded' });
    await px.complete(a.id);

    const payout = await api('POST', '/prestataire/retrait', prestataire.token);
    expect(payout.statusCode, payout.body).toBe(201);
    const account = (await api('GET', '/prestataire/psp/status', prestataire.token)).json().data.account_id as string;
    expect(last('/v1/balance')!.stripeAccount).toBe(account);
    const created = last('/v1/payouts')!;
    // 27 000 − 9 000 reversed + 4 500.
    expect(created.form).toMatchObject({ amount: '22500', currency: 'eur' });
    expect(created.stripeAccount).toBe(account);
    expect(payout.json().data).toMatchObject({ status: 'pending', amount_cents: 22_500 });

    // The bank's answer comes as payout.paid on the connected account.
    const [stored] = await t.database.db.select().from(payouts).where(eq(payouts.id, payout.json().data.id));
    const paid = stripeEvent('payout.paid', { id: stored!.payoutId, object: 'payout', amount: 22_500, status: 'paid' }, { account });
    expect((await deliver(signedDelivery(paid))).statusCode).toBe(200);
    const revenue = (await api('GET', '/prestataire/revenue', prestataire.token)).json().data;
    expect(revenue).toMatchObject({ paid_out_cents: 22_500, pending_payouts_cents: 0, transferred_cents: 22_500, gross_cents: 25_000 });
    expect(revenue.payouts[0]).toMatchObject({ status: 'paid' });
  });

  it('holds a share Stripe refuses to transfer, and sends it as a new attempt once account.updated says the account can receive it', async () => {
    const a = await px.appointment(client, prestataire, { priceCents: 4_000 });
    const { payment } = (await api('POST', `/appointments/${a.id}/payment/initiate`, client.token)).json().data;
    const [row] = await t.database.db.select().from(payments).where(eq(payments.id, payment.id));
    Object.assign(stripe.intents.get(row!.intentId)!, { status: 'succeeded', latest_charge: 'ch_fake_3' });
    await api('POST', `/appointments/${a.id}/payment/validate`, client.token, {});
    stripe.failures.push({ path: 'POST v1/transfers', status: 400, body: { error: { type: 'invalid_request_error', message: 'Destination cannot receive transfers' } } });
    await px.complete(a.id);
    const held = await t.database.db.select().from(paymentTransfers).where(eq(paymentTransfers.paymentId, payment.id));
    expect(held[0]).toMatchObject({ status: 'held', holdReason: 'transfer_refused' });
    const refusedKey = last('/v1/transfers')!.idempotencyKey!;
    // Reading the status sends nothing: only the processor's word about the account does.
    await api('GET', '/prestataire/psp/status', prestataire.token);
    await px.moves();
    expect((await t.database.db.select().from(paymentTransfers).where(eq(paymentTransfers.paymentId, payment.id)))[0]).toMatchObject({ status: 'held' });
    const accountId = (await api('GET', '/prestataire/psp/status', prestataire.token)).json().data.account_id as string;
    const updated = stripeEvent(
      'account.updated',
      { id: accountId, object: 'account', charges_enabled: true, payouts_enabled: true, details_submitted: true, capabilities: { transfers: 'active' }, requirements: { currently_due: [] } },
      { account: accountId },
    );
    expect((await deliver(signedDelivery(updated))).statusCode).toBe(200);
    await px.moves();
    const sent = await t.database.db.select().from(paymentTransfers).where(eq(paymentTransfers.paymentId, payment.id));
    expect(sent[0]).toMatchObject({ status: 'paid', amountCents: 3_600 });
    // A new attempt, with a new key: Stripe keeps the refusal under the old one for 24 hours.
    const retried = last('/v1/transfers')!.idempotencyKey!;
    expect(retried).toBe(refusedKey.replace(/-1$/, '-2'));
    // The same event delivered again sends nothing more.
    const transfersBefore = stripe.requests.filter((r) => r.method === 'POST' && r.path === '/v1/transfers').length;
    await deliver(signedDelivery({ ...updated, id: `${updated.id}_again` }));
    await px.moves();
    expect(stripe.requests.filter((r) => r.method === 'POST' && r.path === '/v1/transfers').length).toBe(transfersBefore);
  });

  it('answers 502 when Stripe refuses, and 400 to an unsigned webhook', async () => {
    const a = await px.appointment(client, prestataire, { priceCents: 7_000 });
    stripe.failures.push({ path: 'POST v1/payment_intents', status: 400, body: { error: { type: 'invalid_request_error', message: 'Amount too large' } } });
    expectError(await api('POST', `/appointments/${a.id}/payment/initiate`, client.token), 502, 'bad_gateway');
    expect((await api('POST', `/appointments/${a.id}/payment/initiate`, client.token)).statusCode).toBe(201);
    expectError(await deliver({ payload: JSON.stringify(stripeEvent('payment_intent.succeeded', { id: 'pi_x' })) }), 400, 'bad_request');
  });
});
