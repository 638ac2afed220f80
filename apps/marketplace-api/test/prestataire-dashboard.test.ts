import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { payments, prestataireProfiles } from '../src/db/schema/index.js';
import { addDays, todayIn } from '../src/lib/time.js';
import { lifecycleFixtures } from './admin-lifecycle-fixtures.js';
import { bearer, buildTestApp, createAdmin, createClient, createPrestataire, expectError, type TestApp, type TestUser } from './helpers.js';

let t: TestApp;
let fx: ReturnType<typeof lifecycleFixtures>;
let me: TestUser;
let rival: TestUser;
let client: TestUser;
let serviceId: number;
let intent = 0;

// Paris moves to summer time on 2025-03-30: local midnight is 23:00 UTC on the 29th, then 22:00 UTC.
const justBefore30 = new Date('2025-03-29T22:59:59Z'); // 23:59:59 on the 29th in Paris
const at30 = new Date('2025-03-29T23:00:00Z'); // 00:00 on the 30th
const late30 = new Date('2025-03-30T21:59:59Z'); // 23:59:59 on the 30th
const at31 = new Date('2025-03-30T22:00:00Z'); // 00:00 on the 31st
const outside = new Date('2025-04-02T10:00:00Z');

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '100000' });
  fx = lifecycleFixtures(t);
  me = await createPrestataire(t, { status: 'validated' });
  rival = await createPrestataire(t, { status: 'validated' });
  client = await createClient(t);
  await t.database.db.update(prestataireProfiles).set({ ratingAverage: 4.5, ratingCount: 2 }).where(eq(prestataireProfiles.userId, me.user.id));
  const category = await fx.category();
  serviceId = (await fx.service(category.id)).id;
  const vehicle = await fx.vehicle(client.user.id);
  const request = (createdAt: Date, prestataireId?: number) =>
    fx.request({ clientId: client.user.id, vehicleId: vehicle.id, serviceId, createdAt, ...(prestataireId ? { prestataireId } : {}) });

  // Received: a direct request (29th), an open request it made an offer on (30th, accepted) and one
  // it quoted with the rival (31st, still pending). Not received: the rival's direct request, an
  // open request nobody of ours quoted, and a direct request outside the period.
  const direct = await request(justBefore30, me.user.id);
  const quotedAccepted = await request(at30);
  const quotedPending = await request(at31);
  await request(late30, rival.user.id);
  await request(late30);
  await request(outside, me.user.id);
  await fx.offer({ serviceRequestId: quotedAccepted.id, prestataireId: me.user.id, status: 'accepted', createdAt: at30 });
  await fx.offer({ serviceRequestId: quotedPending.id, prestataireId: me.user.id, createdAt: at31 });
  await fx.offer({ serviceRequestId: quotedPending.id, prestataireId: rival.user.id, createdAt: at31 });
  await fx.offer({ serviceRequestId: direct.id, prestataireId: me.user.id, status: 'refused', createdAt: outside });

  // Appointments by their start: two in the period (one completed), one after it, one of the rival.
  const appointment = async (startsAt: Date, prestataireId: number, values: { status?: 'completed' | 'cancelled' } = {}) => {
    const r = await request(new Date('2025-01-01T10:00:00Z'));
    return fx.appointment({ serviceRequestId: r.id, clientId: client.user.id, prestataireId, vehicleId: vehicle.id, serviceId, startsAt, ...values });
  };
  const done = await appointment(late30, me.user.id, { status: 'completed' });
  const later = await appointment(at31, me.user.id, { status: 'cancelled' });
  await appointment(outside, me.user.id);
  const theirs = await appointment(at30, rival.user.id, { status: 'completed' });

  const pay = async (a: { id: number; prestataireId: number }, values: Partial<typeof payments.$inferInsert> & { amountCents: number }) => {
    intent += 1;
    await t.database.db.insert(payments).values({
      appointmentId: a.id,
      clientId: client.user.id,
      prestataireId: a.prestataireId,
      processor: 'builtin',
      intentId: `pi_dash_${intent}`,
      clientSecret: `s_${intent}`,
      status: 'succeeded',
      ...values,
    });
  };
  await pay(done, { amountCents: 10_000, commissionCents: 1_500, paidAt: late30 });
  await pay(later, { amountCents: 4_000, commissionCents: 400, status: 'failed' });
  await pay(theirs, { amountCents: 9_000, commissionCents: 900, paidAt: at30 });
});
afterAll(() => t.close());

function get(url: string, token = me.token) {
  return t.app.inject({ method: 'GET', url: `/api/v1/prestataire${url}`, headers: bearer(token) });
}

const expectedTotals = {
  requests_received: 3,
  offers_sent: 2,
  offers_accepted: 1,
  conversion: 0.5,
  revenue_cents: 8_500,
  appointments: { scheduled: 0, in_progress: 0, ended: 0, completed: 1, cancelled: 1 },
  rating: { average: 4.5, count: 2 },
};

describe('GET /prestataire/dashboard', () => {
  it('its own figures over a period of its local days', async () => {
    const res = await get('/dashboard?from=2025-03-29&to=2025-03-31');
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toEqual({ from: '2025-03-29', to: '2025-03-31', timezone: 'Europe/Paris', totals: expectedTotals });
  });

  it('counts in its own time zone', async () => {
    // In New York the 31st in Paris is still the 30th: everything but the 31st's rows moves a day.
    await t.database.db.update(prestataireProfiles).set({ timezone: 'America/New_York' }).where(eq(prestataireProfiles.userId, me.user.id));
    try {
      const d = (await get('/dashboard?from=2025-03-29&to=2025-03-29')).json().data;
      expect(d).toMatchObject({ timezone: 'America/New_York', from: '2025-03-29', to: '2025-03-29' });
      expect(d.totals).toMatchObject({ requests_received: 2, offers_sent: 1, offers_accepted: 1 });
    } finally {
      await t.database.db.update(prestataireProfiles).set({ timezone: 'Europe/Paris' }).where(eq(prestataireProfiles.userId, me.user.id));
    }
  });

  it('defaults to the last 30 days; no offers means no conversion', async () => {
    const res = await get('/dashboard');
    expect(res.statusCode).toBe(200);
    const d = res.json().data;
    const today = todayIn('Europe/Paris');
    expect(d).toMatchObject({ from: addDays(today, -29), to: today });
    expect(d.totals).toMatchObject({ requests_received: 0, offers_sent: 0, conversion: null, revenue_cents: 0, rating: { average: 4.5, count: 2 } });
  });

  it('a fresh prestataire has nothing', async () => {
    const fresh = await createPrestataire(t);
    const d = (await get('/dashboard?from=2025-03-29&to=2025-03-31', fresh.token)).json().data;
    expect(d.totals).toEqual({
      requests_received: 0,
      offers_sent: 0,
      offers_accepted: 0,
      conversion: null,
      revenue_cents: 0,
      appointments: { scheduled: 0, in_progress: 0, ended: 0, completed: 0, cancelled: 0 },
      rating: { average: null, count: 0 },
    });
  });
});

describe('GET /prestataire/stats', () => {
  it('the totals and a series per local day, across the change to summer time', async () => {
    const res = await get('/stats?from=2025-03-29&to=2025-03-31&group_by=day');
    expect(res.statusCode).toBe(200);
    const d = res.json().data;
    expect(d).toMatchObject({ from: '2025-03-29', to: '2025-03-31', timezone: 'Europe/Paris', group_by: 'day', totals: expectedTotals });
    expect(d.series).toEqual([
      { bucket: '2025-03-29', requests_received: 1, offers_sent: 0, offers_accepted: 0, appointments: 0, revenue_cents: 0 },
      { bucket: '2025-03-30', requests_received: 1, offers_sent: 1, offers_accepted: 1, appointments: 1, revenue_cents: 8_500 },
      { bucket: '2025-03-31', requests_received: 1, offers_sent: 1, offers_accepted: 0, appointments: 1, revenue_cents: 0 },
    ]);
  });

  it('by week and by month; empty buckets answer 0', async () => {
    const weeks = (await get('/stats?from=2025-03-29&to=2025-04-13&group_by=week')).json().data;
    expect(weeks.series).toEqual([
      { bucket: '2025-03-24', requests_received: 2, offers_sent: 1, offers_accepted: 1, appointments: 1, revenue_cents: 8_500 },
      { bucket: '2025-03-31', requests_received: 2, offers_sent: 2, offers_accepted: 0, appointments: 2, revenue_cents: 0 },
      { bucket: '2025-04-07', requests_received: 0, offers_sent: 0, offers_accepted: 0, appointments: 0, revenue_cents: 0 },
    ]);
    const months = (await get('/stats?from=2025-02-15&to=2025-04-30&group_by=month')).json().data;
    expect(months.series.map((b: { bucket: string; requests_received: number }) => [b.bucket, b.requests_received])).toEqual([
      ['2025-02-01', 0],
      ['2025-03-01', 3],
      ['2025-04-01', 1],
    ]);
  });

  it('defaults to days', async () => {
    const d = (await get('/stats')).json().data;
    expect(d.group_by).toBe('day');
    expect(d.series).toHaveLength(30);
  });
});

describe('access and validation', () => {
  for (const path of ['/dashboard', '/stats']) {
    it(`${path}: 401 without a token, 403 for a client or an administrator`, async () => {
      expectError(await t.app.inject({ method: 'GET', url: `/api/v1/prestataire${path}` }), 401, 'unauthenticated');
      expectError(await get(path, client.token), 403, 'forbidden');
      expectError(await get(path, (await createAdmin(t)).token), 403, 'forbidden');
    });

    it(`${path}: 422 on a reversed, too long or malformed period`, async () => {
      expectError(await get(`${path}?from=2025-03-31&to=2025-03-01`), 422, 'validation_error');
      expectError(await get(`${path}?from=2024-01-01&to=2025-01-02`), 422, 'validation_error');
      expectError(await get(`${path}?from=2025-02-30`), 422, 'validation_error');
      expectError(await get(`${path}?to=yesterday`), 422, 'validation_error');
      expect((await get(`${path}?from=2024-01-01&to=2024-12-31`)).statusCode).toBe(200);
    });
  }

  it('/stats: 422 on an unknown grouping', async () => {
    expectError(await get('/stats?group_by=year'), 422, 'validation_error');
  });
});
