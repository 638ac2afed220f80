import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, appointments, domainEvents, invoices, paymentTransfers, payments } from '../src/db/schema/index.js';
import { createBuiltinProcessor } from '../src/integrations/payments/index.js';
import { systemActor } from '../src/lib/context.js';
import { createActivityRecorder } from '../src/modules/activity-log/activity-log.recorder.js';
import { createOutbox } from '../src/modules/outbox/outbox.js';
import { createPaymentsService } from '../src/modules/payments/index.js';
import { nonAdminTokens } from './admin-lifecycle-fixtures.js';
import { buildTestApp, createAdmin, createClient, createPrestataire, expectAdminOnly, expectError, type NonAdminTokens, type TestApp, type TestUser } from './helpers.js';
import { deliverAll } from './outbox-helpers.js';
import { paymentsFixtures, pdfText, signedDelivery, stripeEvent, WEBHOOK_SECRET } from './payments-fixtures.js';

let t: TestApp;
let admin: TestUser;
let client: TestUser;
let otherClient: TestUser;
let prestataire: TestUser;
let tokens: NonAdminTokens;
const processor = createBuiltinProcessor({ webhookSecret: WEBHOOK_SECRET });
const px = paymentsFixtures(() => t);
const { api, deliver } = px;

interface PaymentJson {
  id: number;
  status: string;
  amount_cents: number;
  commission_cents: number;
  refunded_cents: number;
  transfer_on_hold: boolean;
  hold_reason: string | null;
  paid_at: string | null;
}

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '100000', RATE_LIMIT_PUBLIC: '100000', OUTBOX_INTERVAL_MS: '0' }, { paymentProcessor: processor });
  admin = await createAdmin(t);
  client = await createClient(t);
  otherClient = await createClient(t);
  prestataire = await createPrestataire(t, { status: 'validated' });
  tokens = await nonAdminTokens(t);
});
afterAll(() => t.close());

/** Pays an ended appointment through the built-in processor; answers the payment. */
async function pay(appointmentId: number, who = client): Promise<PaymentJson> {
  const initiated = await api('POST', `/appointments/${appointmentId}/payment/initiate`, who.token);
  expect(initiated.statusCode, initiated.body).toBe(201);
  const validated = await api('POST', `/appointments/${appointmentId}/payment/validate`, who.token, { simulate: 'succeeded' });
  expect(validated.statusCode, validated.body).toBe(200);
  return validated.json().data as PaymentJson;
}

/** The payment's transfer once the money moves' worker has driven what was due. */
async function transferOf(paymentId: number) {
  await px.moves();
  const [row] = await t.database.db.select().from(paymentTransfers).where(eq(paymentTransfers.paymentId, paymentId));
  return row;
}

describe('onboarding', () => {
  it('creates the connected account once, reports its status, and checks the IBAN with mod 97', async () => {
    const before = await api('GET', '/prestataire/psp/status', prestataire.token);
    expect(before.statusCode).toBe(200);
    expect(before.json().data).toMatchObject({ onboarded: false, payouts_enabled: false });

    const iban0 = await api('PUT', '/prestataire/psp/iban', prestataire.token, { iban: 'FR1420041010050500013M02606' });
    expectError(iban0, 409, 'conflict');

    const first = await api('POST', '/prestataire/psp/onboard', prestataire.token);
    expect(first.statusCode, first.body).toBe(200);
    const { account, url } = first.json().data;
    expect(url).toMatch(/^http/);
    const second = await api('POST', '/prestataire/psp/onboard', prestataire.token);
    expect(second.json().data.account.account_id).toBe(account.account_id);

    const bad = await api('PUT', '/prestataire/psp/iban', prestataire.token, { iban: 'FR1420041010050500013M02607' });
    expectError(bad, 422, 'validation_error');
    expect(bad.json().errors).toHaveProperty('iban');

    const good = await api('PUT', '/prestataire/psp/iban', prestataire.token, { iban: 'FR14 2004 1010 0505 0001 3M02 606' });
    expect(good.statusCode, good.body).toBe(200);
    expect(good.json().data).toMatchObject({ iban_last4: '2606', payouts_enabled: true, details_submitted: true });

    const status = await api('GET', '/prestataire/psp/status', prestataire.token);
    expect(status.json().data).toMatchObject({ onboarded: true, charges_enabled: true, payouts_enabled: true, requirements: [] });
  });

  it('is for prestataires only', async () => {
    expectError(await api('POST', '/prestataire/psp/onboard'), 401, 'unauthenticated');
    expectError(await api('POST', '/prestataire/psp/onboard', client.token), 403, 'forbidden');
    expectError(await api('GET', '/prestataire/psp/status', client.token), 403, 'forbidden');
    expectError(await api('PUT', '/prestataire/psp/iban', admin.token, { iban: 'FR1420041010050500013M02606' }), 403, 'forbidden');
    expectError(await api('POST', '/prestataire/retrait', client.token), 403, 'forbidden');
    expectError(await api('GET', '/prestataire/revenue', client.token), 403, 'forbidden');
  });
});

describe('paying an appointment', () => {
  it('initiates once, answers the same payment again, and settles through the signed webhook', async () => {
    const a = await px.appointment(client, prestataire, { priceCents: 15_000 });
    const first = await api('POST', `/appointments/${a.id}/payment/initiate`, client.token);
    expect(first.statusCode, first.body).toBe(201);
    const { payment, client_secret } = first.json().data;
    expect(payment).toMatchObject({ status: 'requires_payment', amount_cents: 15_000, appointment_id: a.id });
    expect(client_secret).toContain(payment.id ? '_secret_' : '');

    const again = await api('POST', `/appointments/${a.id}/payment/initiate`, client.token);
    expect(again.statusCode).toBe(200);
    expect(again.json().data.payment.id).toBe(payment.id);
    expect(again.json().data.client_secret).toBe(client_secret);

    // No simulation: the processor says nothing happened yet, whatever the client claims.
    const reread = await api('POST', `/appointments/${a.id}/payment/validate`, client.token, {});
    expect(reread.json().data.status).toBe('requires_payment');

    const failed = await api('POST', `/appointments/${a.id}/payment/validate`, client.token, { simulate: 'failed' });
    expect(failed.json().data).toMatchObject({ status: 'failed' });

    const retried = await api('POST', `/appointments/${a.id}/payment/initiate`, client.token);
    expect(retried.statusCode).toBe(200);
    expect(retried.json().data.payment.id).toBe(payment.id);

    const paid = await api('POST', `/appointments/${a.id}/payment/validate`, client.token, { simulate: 'succeeded' });
    expect(paid.json().data).toMatchObject({ status: 'succeeded', commission_cents: 1500 });

    const [row] = await t.database.db.select().from(appointments).where(eq(appointments.id, a.id));
    expect(row!.paidAt).not.toBeNull();
    const events = await t.database.db
      .select()
      .from(domainEvents)
      .where(and(eq(domainEvents.subjectType, 'payment'), eq(domainEvents.subjectId, payment.id)));
    expect(events.map((e) => e.type)).toEqual(['payment.initiated', 'payment.processing', 'payment.failed', 'payment.processing', 'payment.succeeded']);
    const logged = await t.database.db.select().from(activityLog).where(and(eq(activityLog.subjectType, 'payment'), eq(activityLog.subjectId, payment.id)));
    expect(logged.map((l) => l.action)).toContain('payment.succeeded');

    expectError(await api('POST', `/appointments/${a.id}/payment/initiate`, client.token), 409, 'conflict');
  });

  it.skipIf(!process.env.TEST_DATABASE_URL)('ten concurrent initiations make one payment', async () => {
    const a = await px.appointment(client, prestataire, { priceCents: 6_000 });
    const answers = await Promise.all(Array.from({ length: 10 }, () => api('POST', `/appointments/${a.id}/payment/initiate`, client.token)));
    expect(answers.map((r) => r.statusCode).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
    expect(new Set(answers.map((r) => r.json().data.payment.id)).size).toBe(1);
    expect(await t.database.db.select().from(payments).where(eq(payments.appointmentId, a.id))).toHaveLength(1);
  });

  it.skipIf(!process.env.TEST_DATABASE_URL)('concurrent payments take invoice numbers without gaps or duplicates', async () => {
    const list = await Promise.all(Array.from({ length: 6 }, () => px.appointment(client, prestataire, { priceCents: 1_000 })));
    await Promise.all(list.map((a) => pay(a.id)));
    const rows = await t.database.db.select().from(invoices).orderBy(invoices.sequence);
    rows.forEach((r, i) => expect(r.sequence).toBe(i + 1));
  });

  it('refuses what the appointment and the caller do not allow', async () => {
    const scheduled = await px.appointment(client, prestataire, { status: 'scheduled' });
    const res = await api('POST', `/appointments/${scheduled.id}/payment/initiate`, client.token);
    expectError(res, 409, 'conflict');
    expect(res.json().current_status).toBe('scheduled');

    const a = await px.appointment(client, prestataire);
    expectError(await api('POST', `/appointments/${a.id}/payment/initiate`), 401, 'unauthenticated');
    expectError(await api('POST', `/appointments/${a.id}/payment/initiate`, prestataire.token), 403, 'forbidden');
    expectError(await api('POST', `/appointments/${a.id}/payment/initiate`, otherClient.token), 404, 'not_found');
    expectError(await api('POST', `/appointments/999999/payment/initiate`, client.token), 404, 'not_found');
    expectError(await api('POST', `/appointments/${a.id}/payment/validate`, client.token, {}), 404, 'not_found');
    await api('POST', `/appointments/${a.id}/payment/initiate`, client.token);
    expectError(await api('POST', `/appointments/${a.id}/payment/validate`, otherClient.token, {}), 404, 'not_found');
    expectError(await api('POST', `/appointments/${a.id}/payment/validate`, client.token, { simulate: 'maybe' }), 422, 'validation_error');
  });
});

describe('webhooks', () => {
  it('refuses unsigned, badly signed and stale deliveries, changing nothing', async () => {
    const a = await px.appointment(client, prestataire);
    const { payment } = (await api('POST', `/appointments/${a.id}/payment/initiate`, client.token)).json().data;
    const [row] = await t.database.db.select().from(payments).where(eq(payments.id, payment.id));
    const event = stripeEvent('payment_intent.succeeded', { id: row!.intentId, object: 'payment_intent', status: 'succeeded', latest_charge: 'ch_x' });

    expectError(await deliver({ payload: JSON.stringify(event) }), 400, 'bad_request');
    expectError(await deliver(signedDelivery(event, { secret: 'whsec_wrong' })), 400, 'bad_request');
    expectError(await deliver(signedDelivery(event, { timestamp: Math.floor(Date.now() / 1000) - 301 })), 400, 'bad_request');
    const tampered = signedDelivery(event);
    expectError(await deliver({ payload: tampered.payload.replace('succeeded', 'succeeded '), signature: tampered.signature }), 400, 'bad_request');
    expectError(await deliver({ payload: 'not json', signature: signedDelivery(event).signature }), 400, 'bad_request');

    const [after] = await t.database.db.select().from(payments).where(eq(payments.id, payment.id));
    expect(after!.status).toBe('requires_payment');
  });

  it('applies each event once: the same events 100 times each, in random order', async () => {
    const a = await px.appointment(client, prestataire, { priceCents: 9_999 });
    const { payment } = (await api('POST', `/appointments/${a.id}/payment/initiate`, client.token)).json().data;
    const [row] = await t.database.db.select().from(payments).where(eq(payments.id, payment.id));
    const intent = { id: row!.intentId, object: 'payment_intent' };
    const events = [
      stripeEvent('payment_intent.processing', { ...intent, status: 'processing' }),
      stripeEvent('payment_intent.succeeded', { ...intent, status: 'succeeded', latest_charge: 'ch_storm' }),
      stripeEvent('payment_intent.payment_failed', { ...intent, status: 'requires_payment_method', last_payment_error: { message: 'late failure' } }),
    ];
    const deliveries = events.flatMap((e) => Array.from({ length: 100 }, () => e));
    for (let i = deliveries.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [deliveries[i], deliveries[j]] = [deliveries[j]!, deliveries[i]!];
    }
    const applied = { yes: 0, no: 0 };
    for (const e of deliveries) {
      const res = await deliver(signedDelivery(e));
      expect(res.statusCode, res.body).toBe(200);
      if (res.json().applied) applied.yes += 1;
      else applied.no += 1;
    }
    expect(applied).toEqual({ yes: 3, no: 297 });
    const [after] = await t.database.db.select().from(payments).where(eq(payments.id, payment.id));
    // Whatever came first, a failure never undoes a success; and success is recorded once.
    const succeededEvents = await t.database.db
      .select()
      .from(domainEvents)
      .where(and(eq(domainEvents.subjectId, payment.id), eq(domainEvents.type, 'payment.succeeded')));
    expect(succeededEvents).toHaveLength(1);
    expect(['succeeded']).toContain(after!.status);
    const issued = await t.database.db.select().from(invoices).where(eq(invoices.paymentId, payment.id));
    expect(issued).toHaveLength(1);
  });
});

describe('the money path', () => {
  it('initiate → pay → complete → transfer → payout, with revenue and an invoice', async () => {
    const a = await px.appointment(client, prestataire, { priceCents: 20_000 });
    const payment = await pay(a.id);
    expect(payment.commission_cents).toBe(2000);
    expect(await transferOf(payment.id)).toBeUndefined();

    await px.complete(a.id);
    const transfer = await transferOf(payment.id);
    expect(transfer).toMatchObject({ status: 'paid', amountCents: 18_000, transferGroup: `appointment_${a.id}` });

    const revenue = await api('GET', '/prestataire/revenue', prestataire.token);
    expect(revenue.statusCode, revenue.body).toBe(200);
    expect(revenue.json().data.transferred_cents).toBeGreaterThanOrEqual(18_000);

    const payout = await api('POST', '/prestataire/retrait', prestataire.token);
    expect(payout.statusCode, payout.body).toBe(201);
    expect(payout.json().data.amount_cents).toBeGreaterThanOrEqual(18_000);
    const after = (await api('GET', '/prestataire/revenue', prestataire.token)).json().data;
    expect(after.payouts[0]).toMatchObject({ status: 'paid' });
    expect(after.paid_out_cents).toBe(payout.json().data.amount_cents);
    expectError(await api('POST', '/prestataire/retrait', prestataire.token), 409, 'conflict');

    const history = await api('GET', '/payments/history', client.token);
    expect(history.json().data.map((p: PaymentJson) => p.id)).toContain(payment.id);
    const prestataireHistory = await api('GET', '/payments/history', prestataire.token);
    expect(prestataireHistory.json().data.map((p: PaymentJson) => p.id)).toContain(payment.id);
    const otherHistory = await api('GET', '/payments/history', otherClient.token);
    expect(otherHistory.json().data.map((p: PaymentJson) => p.id)).not.toContain(payment.id);

    const invoice = await api('GET', `/payments/${payment.id}/invoice`, client.token);
    expect(invoice.statusCode).toBe(200);
    expect(invoice.headers['content-type']).toBe('application/pdf');
    const text = pdfText(invoice.rawPayload);
    const [inv] = await t.database.db.select().from(invoices).where(eq(invoices.paymentId, payment.id));
    expect(text).toContain(`Facture ${inv!.number}`);
    expect(text).toContain(`SIRET: ${prestataire.profile!.siret}`);
    expect(text).toContain(prestataire.profile!.businessName);
    expect(text).toContain(`${client.user.firstName} ${client.user.lastName}`);
    expect(text).toContain('Total TTC: 200,00 EUR');
    expect(text).toContain('TVA 20 %: 33,33 EUR');
    expect(text).toContain('Total HT: 166,67 EUR');

    await api('PUT', '/auth/me/lang', prestataire.token, { lang: 'en' });
    const english = pdfText((await api('GET', `/payments/${payment.id}/invoice`, prestataire.token)).rawPayload);
    expect(english).toContain(`Invoice ${inv!.number}`);
    expect(english).toContain('Total incl. VAT: 200.00 EUR');

    expectError(await api('GET', `/payments/${payment.id}/invoice`, otherClient.token), 404, 'not_found');
    expectError(await api('GET', `/payments/${payment.id}/invoice`), 401, 'unauthenticated');
  });

  it("the client's completion through the appointments routes, once paid, sends the share", async () => {
    const a = await px.appointment(client, prestataire, { priceCents: 11_000 });
    const early = await api('POST', `/appointments/${a.id}/complete`, client.token);
    expectError(early, 409, 'conflict');
    const payment = await pay(a.id);
    const done = await api('POST', `/appointments/${a.id}/complete`, client.token);
    expect(done.statusCode, done.body).toBe(200);
    await px.delivered(a.id);
    expect(await transferOf(payment.id)).toMatchObject({ status: 'paid', amountCents: 9_900, transferGroup: `appointment_${a.id}` });
  });

  it('numbers invoices without gaps within the year', async () => {
    const rows = await t.database.db.select().from(invoices).orderBy(invoices.sequence);
    expect(rows.length).toBeGreaterThan(1);
    rows.forEach((r, i) => expect(r.sequence).toBe(i + 1));
    expect(rows[0]!.number).toMatch(/^\d{4}-000001$/);
  });

  it('a refund before completion leaves the prestataire untouched; its transfer is then what is left', async () => {
    const a = await px.appointment(client, prestataire, { priceCents: 10_000 });
    const payment = await pay(a.id);
    const partial = await api('POST', `/admin/payments/${payment.id}/refund`, admin.token, { amount_cents: 4_000, reason: 'Part of the work not done' });
    expect(partial.statusCode, partial.body).toBe(200);
    expect(partial.json().data).toMatchObject({ status: 'partially_refunded', refunded_cents: 4_000 });
    expect(await transferOf(payment.id)).toBeUndefined();

    const tooMuch = await api('POST', `/admin/payments/${payment.id}/refund`, admin.token, { amount_cents: 6_001, reason: 'x' });
    expectError(tooMuch, 422, 'validation_error');

    await px.complete(a.id);
    // Share 9 000, 40 % refunded: 5 400 goes out.
    expect(await transferOf(payment.id)).toMatchObject({ status: 'paid', amountCents: 5_400 });
  });

  it('a refund after completion reverses the transfer in proportion', async () => {
    const a = await px.appointment(client, prestataire, { priceCents: 10_000 });
    const payment = await pay(a.id);
    await px.complete(a.id);
    expect(await transferOf(payment.id)).toMatchObject({ status: 'paid', amountCents: 9_000, reversedCents: 0 });

    const half = await api('POST', `/admin/payments/${payment.id}/refund`, admin.token, { amount_cents: 5_000, reason: 'Goodwill' });
    expect(half.statusCode, half.body).toBe(200);
    expect(await transferOf(payment.id)).toMatchObject({ status: 'partially_reversed', reversedCents: 4_500 });

    const rest = await api('POST', `/admin/payments/${payment.id}/refund`, admin.token, { reason: 'Refund all' });
    expect(rest.json().data).toMatchObject({ status: 'refunded', refunded_cents: 10_000 });
    expect(await transferOf(payment.id)).toMatchObject({ status: 'reversed', reversedCents: 9_000 });

    const again = await api('POST', `/admin/payments/${payment.id}/refund`, admin.token, { reason: 'again' });
    expectError(again, 409, 'conflict');
    expect(again.json().current_status).toBe('refunded');
    await expectAdminOnly(t, tokens, 'POST', `/admin/payments/${payment.id}/refund`, { reason: 'x' });
    expectError(await api('POST', `/admin/payments/999999/refund`, admin.token, { reason: 'x' }), 404, 'not_found');
  });

  it('an open card dispute holds the transfer until it is closed', async () => {
    const a = await px.appointment(client, prestataire, { priceCents: 10_000 });
    const payment = await pay(a.id);
    const [row] = await t.database.db.select().from(payments).where(eq(payments.id, payment.id));
    const dispute = { id: 'dp_1', object: 'dispute', charge: row!.chargeId, payment_intent: row!.intentId };
    expect((await deliver(signedDelivery(stripeEvent('charge.dispute.created', { ...dispute, status: 'needs_response' })))).statusCode).toBe(200);

    await px.complete(a.id);
    expect(await transferOf(payment.id)).toMatchObject({ status: 'held', holdReason: 'dispute' });

    expect((await deliver(signedDelivery(stripeEvent('charge.dispute.closed', { ...dispute, status: 'won' })))).statusCode).toBe(200);
    expect(await transferOf(payment.id)).toMatchObject({ status: 'paid', amountCents: 9_000 });
  });

  it('a conversation dispute holds and releases the transfer through the service', async () => {
    const db = t.database.db;
    const service = createPaymentsService({
      db,
      recorder: createActivityRecorder({ db }),
      outbox: createOutbox({ db }),
      processor,
      config: { returnUrl: 'http://x.test/r', refreshUrl: 'http://x.test/f', vatPercent: 20, timeZone: 'Europe/Paris' },
    });
    const a = await px.appointment(client, prestataire, { priceCents: 5_000 });
    expect(await service.holdTransfer(systemActor, a.id, 'conversation_dispute')).toBe(false);
    const payment = await pay(a.id);
    expect(await service.holdTransfer(systemActor, a.id, 'conversation_dispute')).toBe(true);
    await px.complete(a.id);
    expect(await transferOf(payment.id)).toMatchObject({ status: 'held', holdReason: 'conversation_dispute' });
    expect(await service.releaseTransfer(systemActor, a.id)).toBe(true);
    expect(await transferOf(payment.id)).toMatchObject({ status: 'paid', amountCents: 4_500 });
    expect(await service.holdTransfer(systemActor, a.id, 'too late')).toBe(false);
  });

  it("a dispute reported in the appointment's conversation, even before payment, holds the share until an administrator resolves it", async () => {
    const a = await px.appointment(client, prestataire, { priceCents: 7_000 });
    const opened = await api('POST', '/conversations', client.token, { participant_id: prestataire.user.id, appointment_id: a.id });
    expect(opened.statusCode, opened.body).toBe(201);
    const conversationId = opened.json().data.id as number;
    expect((await api('POST', `/conversations/${conversationId}/report-dispute`, client.token, { reason: 'Travail mal fait' })).statusCode).toBe(200);
    await deliverAll(t, ['payments.transfers']);
    const payment = await pay(a.id);
    await px.complete(a.id);
    expect(await transferOf(payment.id)).toMatchObject({ status: 'held', holdReason: 'conversation_dispute' });

    const resolved = await api('POST', `/admin/conversations/${conversationId}/resolve-dispute`, admin.token, { note: 'Travail repris' });
    expect(resolved.statusCode, resolved.body).toBe(200);
    await deliverAll(t, ['payments.transfers']);
    expect(await transferOf(payment.id)).toMatchObject({ status: 'paid', amountCents: 6_300 });
  });

  it('a prestataire without a connected account gets its share once it has one', async () => {
    const newcomer = await createPrestataire(t, { status: 'validated' });
    const a = await px.appointment(client, newcomer, { priceCents: 8_000 });
    const payment = await pay(a.id);
    await px.complete(a.id);
    expect(await transferOf(payment.id)).toMatchObject({ status: 'held', holdReason: 'no_connected_account' });
    await api('POST', '/prestataire/psp/onboard', newcomer.token);
    await api('GET', '/prestataire/psp/status', newcomer.token);
    expect(await transferOf(payment.id)).toMatchObject({ status: 'paid', amountCents: 7_200 });
  });
});

describe('administration', () => {
  it('reads and changes the commission settings, logged, applied to payments not yet paid', async () => {
    const res = await api('GET', '/admin/commission-settings', admin.token);
    expect(res.json().data).toEqual({ percentage: 10, fixed_cents: 0, minimum_cents: 0 });

    const a = await px.appointment(client, prestataire, { priceCents: 10_000 });
    await api('POST', `/appointments/${a.id}/payment/initiate`, client.token);
    const put = await api('PUT', '/admin/commission-settings', admin.token, { percentage: 12.5, fixed_cents: 30, minimum_cents: 200 });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json().data).toEqual({ percentage: 12.5, fixed_cents: 30, minimum_cents: 200 });
    const paid = await api('POST', `/appointments/${a.id}/payment/validate`, client.token, { simulate: 'succeeded' });
    expect(paid.json().data.commission_cents).toBe(1_280);

    const logged = await t.database.db.select().from(activityLog).where(eq(activityLog.action, 'commission_settings.updated'));
    expect(logged).toHaveLength(1);

    const bad = await api('PUT', '/admin/commission-settings', admin.token, { percentage: 101, fixed_cents: -1, minimum_cents: 1.5 });
    expectError(bad, 422, 'validation_error');
    expect(Object.keys(bad.json().errors).sort()).toEqual(['fixed_cents', 'minimum_cents', 'percentage']);
    await api('PUT', '/admin/commission-settings', admin.token, { percentage: 10, fixed_cents: 0, minimum_cents: 0 });
    await expectAdminOnly(t, tokens, 'GET', '/admin/commission-settings');
    await expectAdminOnly(t, tokens, 'PUT', '/admin/commission-settings', { percentage: 10, fixed_cents: 0, minimum_cents: 0 });
  });

  it('lists payments with filters and sums them by day and month', async () => {
    const all = await api('GET', '/admin/payments?per_page=100', admin.token);
    expect(all.statusCode).toBe(200);
    expect(all.json().meta.total).toBeGreaterThan(3);
    const refunded = await api('GET', '/admin/payments?status=refunded', admin.token);
    expect(refunded.json().data.every((p: PaymentJson) => p.status === 'refunded')).toBe(true);
    const none = await api('GET', `/admin/payments?user_id=${otherClient.user.id}`, admin.token);
    expect(none.json().data).toEqual([]);
    const mine = await api('GET', `/admin/payments?user_id=${client.user.id}&from=2020-01-01&to=2100-01-01`, admin.token);
    expect(mine.json().meta.total).toBe(all.json().meta.total);
    expectError(await api('GET', '/admin/payments?from=2026-02-01&to=2026-01-01', admin.token), 422, 'validation_error');
    expectError(await api('GET', '/admin/payments?status=lost', admin.token), 422, 'validation_error');

    const dayRes = await api('GET', '/admin/payments/stats', admin.token);
    expect(dayRes.statusCode, dayRes.body).toBe(200);
    const byDay = dayRes.json().data;
    const byMonth = (await api('GET', '/admin/payments/stats?group_by=month', admin.token)).json().data;
    expect(byDay.time_zone).toBe('Europe/Paris');
    expect(byDay.totals).toEqual(byMonth.totals);
    expect(byDay.totals.volume_cents).toBeGreaterThan(0);
    expect(byDay.totals.refunds_cents).toBeGreaterThanOrEqual(14_000);
    expect(byMonth.periods[0].period).toMatch(/^\d{4}-\d{2}$/);
    await expectAdminOnly(t, tokens, 'GET', '/admin/payments');
    await expectAdminOnly(t, tokens, 'GET', '/admin/payments/stats');
  });
});
