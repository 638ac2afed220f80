import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appointments, conversationMessages, domainEvents, offers, payments } from '../src/db/schema/index.js';
import { createBuiltinProcessor } from '../src/integrations/payments/index.js';
import { lifecycleFixtures as rowFixtures } from './admin-lifecycle-fixtures.js';
import { bearer, buildTestApp, createClient, createPrestataire, expectError, type TestApp, type TestUser } from './helpers.js';
import { lifecycleFixtures } from './lifecycle-fixtures.js';
import { paymentsFixtures, WEBHOOK_SECRET } from './payments-fixtures.js';

// Retried writes with one Idempotency-Key do their work once (DESIGN.md §10); the mechanics
// themselves are @repo/http's tests.

let t: TestApp;
const f = lifecycleFixtures(() => t);
const px = paymentsFixtures(() => t);
let client: TestUser;
let serviceId: number;

beforeAll(async () => {
  t = await buildTestApp(
    { RATE_LIMIT_AUTHENTICATED: '100000', RATE_LIMIT_PUBLIC: '100000', OUTBOX_INTERVAL_MS: '0' },
    { paymentProcessor: createBuiltinProcessor({ webhookSecret: WEBHOOK_SECRET }) },
  );
  client = await createClient(t);
  serviceId = (await f.service()).id;
});
afterAll(async () => {
  await t.close();
});

let keys = 0;
const newKey = () => `retry-${Date.now()}-${++keys}`;

function keyed(url: string, token: string, key: string, payload?: Record<string, unknown>) {
  return t.app.inject({
    method: 'POST',
    url: `/api/v1${url}`,
    headers: { ...bearer(token), 'idempotency-key': key },
    ...(payload === undefined ? {} : { payload }),
  });
}

/** Sends the write twice with one key: the first answer, then the same again marked replayed. */
async function twice(url: string, token: string, payload?: Record<string, unknown>) {
  const key = newKey();
  const first = await keyed(url, token, key, payload);
  const again = await keyed(url, token, key, payload);
  expect(first.headers['idempotent-replayed']).toBeUndefined();
  expect(again.headers['idempotent-replayed']).toBe('true');
  expect(again.statusCode).toBe(first.statusCode);
  expect(again.body).toBe(first.body);
  return first;
}

describe('Idempotency-Key on the marketplace', () => {
  it('sends a conversation message once', async () => {
    const prestataire = await createPrestataire(t, { status: 'validated' });
    const rows = rowFixtures(t);
    const category = await rows.category();
    const service = await rows.service(category.id);
    const vehicle = await rows.vehicle(client.user.id);
    await rows.request({ clientId: client.user.id, vehicleId: vehicle.id, serviceId: service.id, prestataireId: prestataire.user.id, status: 'accepted' });
    const opened = await f.api('POST', '/conversations', client.token, { participant_id: prestataire.user.id });
    expect([200, 201], opened.body).toContain(opened.statusCode);
    const conversationId = opened.json().data.id as number;

    const sent = await twice(`/conversations/${conversationId}/messages`, client.token, { body: 'Le véhicule est prêt ?' });
    expect(sent.statusCode, sent.body).toBe(201);
    const messages = await t.database.db.select().from(conversationMessages).where(eq(conversationMessages.conversationId, conversationId));
    expect(messages.filter((m) => m.body === 'Le véhicule est prêt ?')).toHaveLength(1);
  });

  it('makes an offer once and accepts it once; another caller with the same key is another key', async () => {
    const prestataire = await f.prestataire([serviceId]);
    const request = await f.request(client, serviceId);
    const made = await twice(`/service-requests/${request.id}/offers`, prestataire.token, { amount_cents: 12000, proposed_start_at: f.inDays(4), duration_minutes: 60 });
    expect(made.statusCode, made.body).toBe(201);
    const offerId = made.json().data.id as number;
    expect(await t.database.db.select().from(offers).where(eq(offers.serviceRequestId, request.id))).toHaveLength(1);
    expect(await t.database.db.select().from(domainEvents).where(and(eq(domainEvents.type, 'offer.created'), eq(domainEvents.subjectId, offerId)))).toHaveLength(1);

    const key = newKey();
    // Someone else's identical key: their own request, refused for them, replays nothing of the client's.
    expectError(await keyed(`/offers/${offerId}/accept`, (await createClient(t)).token, key), 404, 'not_found');
    const accepted = await keyed(`/offers/${offerId}/accept`, client.token, key);
    expect(accepted.statusCode, accepted.body).toBe(200);
    expect(accepted.headers['idempotent-replayed']).toBeUndefined();
    const again = await keyed(`/offers/${offerId}/accept`, client.token, key);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toBe(accepted.body);
    expect(await t.database.db.select().from(appointments).where(eq(appointments.offerId, offerId))).toHaveLength(1);
    // Without the key, the retry meets the offer's state: 409.
    expectError(await f.api('POST', `/offers/${offerId}/accept`, client.token), 409, 'conflict');
  });

  it('initiates a payment once, answering the first 201 again (not the 200 of a second initiation)', async () => {
    const prestataire = await createPrestataire(t, { status: 'validated' });
    const appointment = await px.appointment(client, prestataire, { priceCents: 9_000 });
    const first = await twice(`/appointments/${appointment.id}/payment/initiate`, client.token);
    expect(first.statusCode, first.body).toBe(201);
    expect(await t.database.db.select().from(payments).where(eq(payments.appointmentId, appointment.id))).toHaveLength(1);
  });
});
