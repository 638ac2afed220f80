import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, appointments, domainEvents, offers, prestataireServices, serviceRequests } from '../src/db/schema/index.js';
import { createActivityRecorder } from '../src/modules/activity-log/activity-log.recorder.js';
import { createLifecycleTimersService } from '../src/modules/booking/timers/timers.service.js';
import { createOutbox } from '../src/modules/outbox/outbox.js';
import { createSettingsService } from '../src/modules/settings/settings.service.js';
import { buildTestApp, createAdmin, createClient, createPrestataire, expectError, type TestApp, type TestUser } from './helpers.js';
import { GRENOBLE, lifecycleFixtures } from './lifecycle-fixtures.js';

let t: TestApp;
const f = lifecycleFixtures(() => t);
const { api } = f;

let client: TestUser;
let other: TestUser;
let admin: TestUser;
let serviceId: number;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_PUBLIC: '100000', RATE_LIMIT_AUTHENTICATED: '100000' });
  [client, other, admin] = await Promise.all([createClient(t), createClient(t), createAdmin(t)]);
  serviceId = (await f.service()).id;
});
afterAll(async () => {
  await t.close();
});

const statusOf = async (offerId: number) => (await t.database.db.select().from(offers).where(eq(offers.id, offerId)))[0]!.status;
const requestStatus = async (id: number) => (await t.database.db.select().from(serviceRequests).where(eq(serviceRequests.id, id)))[0]!.status;

describe('POST /service-requests/{id}/offers', () => {
  it('creates a pending offer; the first one moves the request to quoted', async () => {
    const p = await f.prestataire([serviceId]);
    const r = await f.request(client, serviceId);
    const start = f.inDays(3);
    const res = await f.offer(p, r.id, { proposed_start_at: start, message: 'Pièces comprises', status: 'accepted' });
    expect(res.statusCode, res.body).toBe(201);
    const data = res.json().data;
    expect(data).toMatchObject({
      service_request_id: r.id,
      prestataire_id: p.user.id,
      amount_cents: 12000,
      currency: 'EUR',
      proposed_start_at: start,
      duration_minutes: 60,
      message: 'Pièces comprises',
      status: 'pending',
    });
    expect(data.prestataire.business_name).toBe(p.profile!.businessName);
    // Default validity: the offer lifetime (7 days).
    expect(Math.abs(Date.parse(data.valid_until) - (Date.now() + 7 * 86_400_000))).toBeLessThan(60_000);
    expect(await requestStatus(r.id)).toBe('quoted');
    const events = await t.database.db.select().from(domainEvents).where(eq(domainEvents.subjectId, data.id));
    expect(events.filter((e) => e.subjectType === 'offer').map((e) => e.type)).toEqual(['offer.created']);

    // A second prestataire: the request stays quoted.
    const p2 = await f.prestataire([serviceId]);
    expect((await f.offer(p2, r.id)).statusCode).toBe(201);
    expect(await requestStatus(r.id)).toBe('quoted');
  });

  it('allows one live offer per prestataire per request', async () => {
    const p = await f.prestataire([serviceId]);
    const r = await f.request(client, serviceId);
    expect((await f.offer(p, r.id)).statusCode).toBe(201);
    expectError(await f.offer(p, r.id, { proposed_start_at: f.inDays(4) }), 409, 'conflict');
  });

  it('never stands past the request’s expiry, and checks the dates given', async () => {
    const p = await f.prestataire([serviceId]);
    const r = await f.request(client, serviceId);
    const expiresSoon = new Date(Date.now() + 2 * 86_400_000);
    await t.database.db.update(serviceRequests).set({ expiresAt: expiresSoon }).where(eq(serviceRequests.id, r.id));
    const res = await f.offer(p, r.id);
    expect(res.statusCode, res.body).toBe(201);
    expect(Date.parse(res.json().data.valid_until)).toBe(expiresSoon.getTime());

    const p2 = await f.prestataire([serviceId]);
    const late = await f.offer(p2, r.id, { valid_until: f.inDays(5) });
    expect(expectError(late, 422, 'validation_error').errors).toHaveProperty('valid_until');
    const past = await f.offer(p2, r.id, { valid_until: new Date(Date.now() - 1000).toISOString() });
    expect(expectError(past, 422, 'validation_error').errors).toHaveProperty('valid_until');
  });

  it('needs a free slot of the prestataire (422 on proposed_start_at)', async () => {
    const p = await f.prestataire([serviceId]);
    const r = await f.request(client, serviceId);
    const soon = await f.offer(p, r.id, { proposed_start_at: new Date(Date.now() + 5 * 60_000).toISOString() });
    expect(expectError(soon, 422, 'validation_error').errors).toHaveProperty('proposed_start_at');
    const closed = await createPrestataire(t, { status: 'validated' });
    await t.database.db.insert(prestataireServices).values({ prestataireId: closed.user.id, serviceId });
    const noHours = await f.offer(closed, r.id);
    expect(expectError(noHours, 422, 'validation_error').errors).toHaveProperty('proposed_start_at');
    // Slots start on the prestataire's local 30-minute grid: 10:15 in Paris is not one.
    const offGrid = await f.offer(p, r.id, { proposed_start_at: f.inDays(3).replace(/T\d\d:00/, (m) => m.replace(':00', ':15')) });
    expect(expectError(offGrid, 422, 'validation_error').errors!.proposed_start_at).toEqual(['Must start on your local 30-minute grid (:00 or :30)']);
    const halfPast = await f.offer(p, r.id, { proposed_start_at: f.inDays(3).replace(/T\d\d:00/, (m) => m.replace(':00', ':30')) });
    expect(halfPast.statusCode).toBe(201);
    const bad = await f.offer(p, r.id, { amount_cents: 0, duration_minutes: 5, proposed_start_at: 'demain' });
    expect(Object.keys(expectError(bad, 422, 'validation_error').errors!).sort()).toEqual(['amount_cents', 'duration_minutes', 'proposed_start_at']);
  });

  it('answers 404 for a request out of reach, 409 for one no longer open, 403 to the wrong roles', async () => {
    const p = await f.prestataire([serviceId]);
    const far = await f.request(client, serviceId, { at: GRENOBLE });
    expectError(await f.offer(p, far.id), 404, 'not_found');
    const unoffered = await f.prestataire([(await f.service()).id]);
    const r = await f.request(client, serviceId);
    expectError(await f.offer(unoffered, r.id), 404, 'not_found');
    expectError(await f.offer(p, 99999999), 404, 'not_found');

    // One prestataire quoted before the cancellation: it still sees the request, and learns why no
    // offer goes in. Another never did: the request is gone from its view, and its state is not told.
    const quoted = await f.prestataire([serviceId]);
    expect((await f.offer(quoted, r.id)).statusCode).toBe(201);
    await api('POST', `/client/requests/${r.id}/cancel`, client.token, {});
    expectError(await api('GET', `/prestataire/requests/${r.id}`, p.token), 404, 'not_found');
    expectError(await f.offer(p, r.id), 404, 'not_found');
    expect((await api('GET', `/prestataire/requests/${r.id}`, quoted.token)).statusCode).toBe(200);
    const closed = expectError(await f.offer(quoted, r.id, { proposed_start_at: f.inDays(4) }), 409, 'conflict');
    expect(closed.current_status).toBe('cancelled');

    const open = await f.request(client, serviceId);
    expectError(await f.offer(client, open.id), 403, 'forbidden');
    expectError(await f.offer(await createPrestataire(t, { status: 'pending' }), open.id), 403, 'forbidden');
    expectError(await f.offer(await createPrestataire(t, { status: 'suspended' }), open.id), 403, 'forbidden');
    expectError(await api('POST', `/service-requests/${open.id}/offers`, undefined, {}), 401, 'unauthenticated');
  });
});

describe('GET /service-requests/{id}/offers', () => {
  it('shows its client all offers, a prestataire its own, others nothing', async () => {
    const [p1, p2] = [await f.prestataire([serviceId]), await f.prestataire([serviceId])];
    const r = await f.request(client, serviceId);
    const o1 = (await f.offer(p1, r.id)).json().data;
    const o2 = (await f.offer(p2, r.id)).json().data;
    const ids = async (token: string) => ((await api('GET', `/service-requests/${r.id}/offers`, token)).json().data as { id: number }[]).map((o) => o.id);
    expect(await ids(client.token)).toEqual([o1.id, o2.id]);
    expect(await ids(admin.token)).toEqual([o1.id, o2.id]);
    expect(await ids(p1.token)).toEqual([o1.id]);
    expectError(await api('GET', `/service-requests/${r.id}/offers`, other.token), 404, 'not_found');
    const far = await f.prestataire([serviceId]);
    await t.database.db.update(serviceRequests).set(GRENOBLE).where(eq(serviceRequests.id, r.id));
    expectError(await api('GET', `/service-requests/${r.id}/offers`, far.token), 404, 'not_found');
    // Having offered keeps the request in view.
    expect(await ids(p1.token)).toEqual([o1.id]);
    expectError(await api('GET', `/service-requests/${r.id}/offers`), 401, 'unauthenticated');
  });
});

describe('PUT /offers/{offer}', () => {
  it('changes a pending offer of its prestataire, checking the slot again', async () => {
    const p = await f.prestataire([serviceId]);
    const r = await f.request(client, serviceId);
    const o = (await f.offer(p, r.id)).json().data;
    const body = { amount_cents: 9900, proposed_start_at: f.inDays(4, 15), duration_minutes: 90, message: 'Nouveau créneau' };
    const res = await api('PUT', `/offers/${o.id}`, p.token, body);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ ...body, status: 'pending', valid_until: o.valid_until });
    const soon = await api('PUT', `/offers/${o.id}`, p.token, { ...body, proposed_start_at: new Date(Date.now() + 60_000).toISOString() });
    expect(expectError(soon, 422, 'validation_error').errors).toHaveProperty('proposed_start_at');
    const rival = await f.prestataire([serviceId]);
    expectError(await api('PUT', `/offers/${o.id}`, rival.token, body), 404, 'not_found');
    expectError(await api('PUT', `/offers/${o.id}`, client.token, body), 403, 'forbidden');
    await api('POST', `/offers/${o.id}/refuse`, client.token);
    expect(expectError(await api('PUT', `/offers/${o.id}`, p.token, body), 409, 'conflict').current_status).toBe('refused');
    const logged = await t.database.db.select().from(activityLog).where(and(eq(activityLog.action, 'offer.updated'), eq(activityLog.subjectId, o.id)));
    expect(logged).toHaveLength(1);
  });
});

describe('POST /offers/{offer}/accept and /refuse', () => {
  it('accepts: the offer, the request, the other offers closed and the appointment booked', async () => {
    const [p1, p2] = [await f.prestataire([serviceId]), await f.prestataire([serviceId])];
    const r = await f.request(client, serviceId);
    const start = f.inDays(6, 8);
    const o1 = (await f.offer(p1, r.id, { proposed_start_at: start, amount_cents: 14000, duration_minutes: 120 })).json().data;
    const o2 = (await f.offer(p2, r.id)).json().data;

    expectError(await api('POST', `/offers/${o1.id}/accept`, other.token), 404, 'not_found');
    expectError(await api('POST', `/offers/${o1.id}/accept`, p1.token), 403, 'forbidden');
    expectError(await api('POST', `/offers/${o1.id}/accept`), 401, 'unauthenticated');

    const res = await api('POST', `/offers/${o1.id}/accept`, client.token);
    expect(res.statusCode, res.body).toBe(200);
    const { offer, appointment } = res.json().data;
    expect(offer).toMatchObject({ id: o1.id, status: 'accepted' });
    expect(appointment).toMatchObject({
      service_request_id: r.id,
      offer_id: o1.id,
      client_id: client.user.id,
      prestataire_id: p1.user.id,
      vehicle_id: r.vehicle_id,
      service_id: serviceId,
      starts_at: start,
      ends_at: new Date(Date.parse(start) + 120 * 60_000).toISOString(),
      price_cents: 14000,
      status: 'scheduled',
      price_adjustment: null,
    });
    expect(await statusOf(o2.id)).toBe('refused');
    expect(await requestStatus(r.id)).toBe('accepted');
    const types = (await t.database.db.select().from(domainEvents)).filter((e) => [o1.id, o2.id].includes(e.subjectId) && e.subjectType === 'offer').map((e) => e.type);
    expect(types.sort()).toEqual(['offer.accepted', 'offer.created', 'offer.created', 'offer.refused']);

    expect(expectError(await api('POST', `/offers/${o2.id}/accept`, client.token), 409, 'conflict').current_status).toBe('refused');
    expect(expectError(await api('POST', `/offers/${o1.id}/refuse`, client.token), 409, 'conflict').current_status).toBe('accepted');
    const shown = (await api('GET', `/client/requests/${r.id}`, client.token)).json().data;
    expect(shown.appointment).toMatchObject({ id: appointment.id, offer_id: o1.id });
  });

  it('refuses an offer for the request’s client only', async () => {
    const p = await f.prestataire([serviceId]);
    const r = await f.request(client, serviceId);
    const o = (await f.offer(p, r.id)).json().data;
    expectError(await api('POST', `/offers/${o.id}/refuse`, other.token), 404, 'not_found');
    expectError(await api('POST', `/offers/${o.id}/refuse`, p.token), 403, 'forbidden');
    const res = await api('POST', `/offers/${o.id}/refuse`, client.token);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ id: o.id, status: 'refused' });
    expect(await requestStatus(r.id)).toBe('quoted');
    // Refused, it is no longer live: the prestataire may offer again.
    expect((await f.offer(p, r.id, { proposed_start_at: f.inDays(8) })).statusCode).toBe(201);
  });

  it('answers 409 for an expired offer, and marks it expired', async () => {
    const p = await f.prestataire([serviceId]);
    const r = await f.request(client, serviceId);
    const o = (await f.offer(p, r.id)).json().data;
    await t.database.db.update(offers).set({ validUntil: new Date(Date.now() - 1000) }).where(eq(offers.id, o.id));
    expect(expectError(await api('POST', `/offers/${o.id}/accept`, client.token), 409, 'conflict').current_status).toBe('expired');
    expect(await statusOf(o.id)).toBe('expired');
    expect(await requestStatus(r.id)).toBe('quoted');
  });

  /** The offer's expiries: its log entries and its events. */
  async function expiriesOf(offerId: number) {
    const db = t.database.db;
    const [entries, events] = await Promise.all([
      db.select().from(activityLog).where(and(eq(activityLog.action, 'offer.expired'), eq(activityLog.subjectType, 'offer'), eq(activityLog.subjectId, offerId))),
      db.select().from(domainEvents).where(and(eq(domainEvents.type, 'offer.expired'), eq(domainEvents.subjectType, 'offer'), eq(domainEvents.subjectId, offerId))),
    ]);
    return { entries, events };
  }

  async function staleOffer() {
    const p = await f.prestataire([serviceId]);
    const r = await f.request(client, serviceId);
    const o = (await f.offer(p, r.id)).json().data;
    await t.database.db.update(offers).set({ validUntil: new Date(Date.now() - 1000) }).where(eq(offers.id, o.id));
    return { r, o };
  }

  it('expires an offer past valid_until in the accept’s own transaction, once, however many accepts come at once', async () => {
    const { r, o } = await staleOffer();
    const results = await Promise.all(Array.from({ length: 5 }, () => api('POST', `/offers/${o.id}/accept`, client.token)));
    for (const res of results) {
      expect(expectError(res, 409, 'conflict')).toMatchObject({ current_status: 'expired', message: 'Cannot accept an offer whose status is expired (allowed from: pending)' });
    }
    const { entries, events } = await expiriesOf(o.id);
    expect(entries).toEqual([
      expect.objectContaining({
        actorId: client.user.id,
        before: expect.objectContaining({ status: 'pending' }),
        after: expect.objectContaining({ status: 'expired', reason: 'valid_until_passed' }),
      }),
    ]);
    expect(events).toEqual([expect.objectContaining({ actorId: client.user.id, payload: expect.objectContaining({ from: 'pending', to: 'expired' }) })]);
    expect(await requestStatus(r.id)).toBe('quoted');
    expect(await t.database.db.select().from(appointments).where(eq(appointments.serviceRequestId, r.id))).toEqual([]);
  });

  it('an accept racing the offer-expiry timer: the offer expires once, and the accept answers 409 expired', async () => {
    const { o } = await staleOffer();
    const db = t.database.db;
    const recorder = createActivityRecorder({ db });
    const timers = createLifecycleTimersService({ db, recorder, outbox: createOutbox({ db }), settings: createSettingsService({ db, recorder }) });
    const [accepted, swept] = await Promise.all([api('POST', `/offers/${o.id}/accept`, client.token), timers.offerExpiry()]);
    expect(expectError(accepted, 409, 'conflict').current_status).toBe('expired');
    expect(await statusOf(o.id)).toBe('expired');
    const { entries, events } = await expiriesOf(o.id);
    expect(entries).toHaveLength(1);
    expect(events).toHaveLength(1);
    // Whoever moved it is its actor: the client's accept, or the timer (no user).
    expect(swept.offers.includes(o.id)).toBe(events[0]!.actorId === null);
  });

  it('answers 409 when the prestataire’s slot was taken since the offer', async () => {
    const p = await f.prestataire([serviceId]);
    const start = f.inDays(9, 10);
    const r1 = await f.request(client, serviceId);
    const r2 = await f.request(client, serviceId);
    const o1 = (await f.offer(p, r1.id, { proposed_start_at: start })).json().data;
    const o2 = (await f.offer(p, r2.id, { proposed_start_at: start })).json().data;
    expect((await api('POST', `/offers/${o1.id}/accept`, client.token)).statusCode).toBe(200);
    expectError(await api('POST', `/offers/${o2.id}/accept`, client.token), 409, 'conflict');
    expect(await statusOf(o2.id)).toBe('pending');
    expect(await requestStatus(r2.id)).toBe('quoted');
  });
});

describe('concurrent accepts', () => {
  it('two accepts of two offers on one request: exactly one 200, one 409, one appointment', async () => {
    const [p1, p2] = [await f.prestataire([serviceId]), await f.prestataire([serviceId])];
    const r = await f.request(client, serviceId);
    const o1 = (await f.offer(p1, r.id, { proposed_start_at: f.inDays(10) })).json().data;
    const o2 = (await f.offer(p2, r.id, { proposed_start_at: f.inDays(11) })).json().data;
    const results = await Promise.all([o1.id, o2.id].map((id) => api('POST', `/offers/${id}/accept`, client.token)));
    expect(results.map((x) => x.statusCode).sort()).toEqual([200, 409]);
    expect(await t.database.db.select().from(appointments).where(eq(appointments.serviceRequestId, r.id))).toHaveLength(1);
    expect([await statusOf(o1.id), await statusOf(o2.id)].sort()).toEqual(['accepted', 'refused']);
  });

  it('two offers of two requests for the same slot of a prestataire accepted at once: one wins', async () => {
    const p = await f.prestataire([serviceId]);
    const start = f.inDays(12, 9);
    const r1 = await f.request(client, serviceId);
    const r2 = await f.request(other, serviceId);
    const o1 = (await f.offer(p, r1.id, { proposed_start_at: start })).json().data;
    const o2 = (await f.offer(p, r2.id, { proposed_start_at: start })).json().data;
    const results = await Promise.all([
      api('POST', `/offers/${o1.id}/accept`, client.token),
      api('POST', `/offers/${o2.id}/accept`, other.token),
    ]);
    expect(results.map((x) => x.statusCode).sort()).toEqual([200, 409]);
    const booked = await t.database.db.select().from(appointments).where(eq(appointments.prestataireId, p.user.id));
    expect(booked).toHaveLength(1);
  });
});
