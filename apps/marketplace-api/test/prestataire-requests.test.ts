import { queryRows, withTransaction } from '@repo/db';
import { and, count, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appointments, domainEvents, offers, prestataireProfiles, serviceRequests, users } from '../src/db/schema/index.js';
import { listedFor, visibleTo } from '../src/modules/booking/requests/requests.repository.js';
import { buildTestApp, createClient, createPrestataire, expectError, type TestApp, type TestUser } from './helpers.js';
import { GRENOBLE, lifecycleFixtures, VIENNE } from './lifecycle-fixtures.js';

let t: TestApp;
const f = lifecycleFixtures(() => t);
const { api } = f;

let client: TestUser;
let serviceId: number;
let otherServiceId: number;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_PUBLIC: '100000', RATE_LIMIT_AUTHENTICATED: '100000' });
  client = await createClient(t);
  serviceId = (await f.service({ priceCents: 9000, durationMinutes: 90 })).id;
  otherServiceId = (await f.service()).id;
});
afterAll(async () => {
  await t.close();
});

type Item = { id: number; distance_km: number | null; has_offered: boolean; status: string };
async function listed(p: TestUser, query = '') {
  const res = await api('GET', `/prestataire/requests?per_page=100${query}`, p.token);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data as Item[];
}

describe('GET /prestataire/requests', () => {
  it('lists open requests within the radius for services offered, with their distance', async () => {
    const p = await f.prestataire([serviceId], { radiusKm: 30 });
    const near = await f.request(client, serviceId, { at: VIENNE });
    const far = await f.request(client, serviceId, { at: GRENOBLE });
    const otherService = await f.request(client, otherServiceId, { at: VIENNE });
    const rows = await listed(p);
    const ids = rows.map((r) => r.id);
    expect(ids).toContain(near.id);
    expect(ids).not.toContain(far.id);
    expect(ids).not.toContain(otherService.id);
    const item = rows.find((r) => r.id === near.id)!;
    expect(item.distance_km).toBeGreaterThan(20);
    expect(item.distance_km).toBeLessThan(30);
    expect(item.has_offered).toBe(false);

    // A wider radius reaches Grenoble; a request no longer open drops out of the list.
    await t.database.db.update(prestataireProfiles).set({ serviceRadiusKm: 120 }).where(eq(prestataireProfiles.userId, p.user.id));
    expect((await listed(p)).map((r) => r.id)).toContain(far.id);
    await api('POST', `/client/requests/${near.id}/cancel`, client.token, {});
    expect((await listed(p)).map((r) => r.id)).not.toContain(near.id);
    expect((await listed(p, `&service_id=${otherServiceId}`)).length).toBe(0);
  });

  it('lists direct requests to it whatever their state, and none aimed at others', async () => {
    const p = await f.prestataire([serviceId]);
    const rival = await f.prestataire([serviceId]);
    const mine = await f.request(client, serviceId, { prestataireId: p.user.id, at: GRENOBLE });
    const theirs = await f.request(client, serviceId, { prestataireId: rival.user.id });
    const ids = (await listed(p)).map((r) => r.id);
    expect(ids).toContain(mine.id);
    expect(ids).not.toContain(theirs.id);
    expectError(await api('GET', `/prestataire/requests/${theirs.id}`, p.token), 404, 'not_found');
    const show = await api('GET', `/prestataire/requests/${mine.id}`, p.token);
    expect(show.statusCode).toBe(200);
    expect(show.json().data).toMatchObject({ id: mine.id, direct: true, photos: [], has_offered: false });
  });

  it('marks requests it has offered on', async () => {
    const p = await f.prestataire([serviceId]);
    const r = await f.request(client, serviceId);
    expect((await f.offer(p, r.id)).statusCode).toBe(201);
    expect((await listed(p)).find((x) => x.id === r.id)).toMatchObject({ has_offered: true, status: 'quoted' });
    expect((await listed(p, '&status=open')).map((x) => x.id)).not.toContain(r.id);
  });

  it('is for validated prestataires only', async () => {
    const pending = await createPrestataire(t, { status: 'pending' });
    const suspended = await createPrestataire(t, { status: 'suspended' });
    expectError(await api('GET', '/prestataire/requests', pending.token), 403, 'forbidden');
    expectError(await api('GET', '/prestataire/requests', suspended.token), 403, 'forbidden');
    expectError(await api('GET', '/prestataire/requests', client.token), 403, 'forbidden');
    expectError(await api('GET', '/prestataire/requests'), 401, 'unauthenticated');
    expectError(await api('GET', '/prestataire/requests/1', pending.token), 403, 'forbidden');
    const banned = await f.prestataire([serviceId]);
    await t.database.db.update(users).set({ status: 'banned' }).where(eq(users.id, banned.user.id));
    expectError(await api('GET', '/prestataire/requests', banned.token), 401, 'unauthenticated');
  });

  it('reads the reach and the offers of a prestataire once per statement, not once per request', async () => {
    // Written as correlated EXISTS, the reach test and "has offered" ran once per request (0.8 s for
    // a feed among 50 000 live requests, 0.4 s for GET /service-requests): no subquery of the plans
    // of its feed and of what it may see may depend on the request row. The prestataire's services,
    // base, radius and offers are read once, and each branch of the scope is then an index scan.
    const p = await f.prestataire([serviceId], { radiusKm: 30 });
    // Sequential scans are priced out, so that the plan shows what the query allows whatever the
    // size of the test's tables: a condition no index can serve leaves a scan of every request.
    for (const scope of [listedFor(p.user.id), visibleTo(p.user.id)]) {
      const query = t.database.db.select({ n: count() }).from(serviceRequests).where(scope);
      const [row] = await withTransaction(t.database.db, async (tx) => {
        await tx.execute(sql`set local enable_seqscan = off`);
        return queryRows<{ 'QUERY PLAN': unknown }>(tx, sql`explain (format json) ${query.getSQL()}`);
      });
      const perRow: unknown[] = [];
      const everyRequest: unknown[] = [];
      const walk = (node: unknown): void => {
        if (Array.isArray(node)) return node.forEach(walk);
        if (typeof node !== 'object' || node === null) return;
        const fields = node as Record<string, unknown>;
        if (fields['Parent Relationship'] === 'SubPlan' && JSON.stringify(fields).includes('service_requests.')) perRow.push(fields);
        if (fields['Node Type'] === 'Seq Scan' && fields['Relation Name'] === 'service_requests') everyRequest.push(fields);
        Object.values(fields).forEach(walk);
      };
      walk(row!['QUERY PLAN']);
      expect(JSON.stringify(row)).toContain('service_requests');
      expect(perRow).toEqual([]);
      expect(everyRequest).toEqual([]);
    }
  });
});

describe('POST /prestataire/requests/{id}/accept', () => {
  it('accepts a direct request and books the appointment with its own defaults', async () => {
    const p = await f.prestataire([serviceId], { own: { priceCents: 7500 } });
    const r = await f.request(client, serviceId, { prestataireId: p.user.id });
    const startsAt = f.inDays(5, 9);
    const res = await api('POST', `/prestataire/requests/${r.id}/accept`, p.token, { starts_at: startsAt });
    expect(res.statusCode, res.body).toBe(200);
    const { service_request, appointment } = res.json().data;
    expect(service_request).toMatchObject({ id: r.id, status: 'accepted' });
    expect(appointment).toMatchObject({
      service_request_id: r.id,
      offer_id: null,
      client_id: client.user.id,
      prestataire_id: p.user.id,
      vehicle_id: r.vehicle_id,
      service_id: serviceId,
      starts_at: startsAt,
      ends_at: new Date(Date.parse(startsAt) + 90 * 60_000).toISOString(),
      price_cents: 7500,
      status: 'scheduled',
    });
    const events = await t.database.db.select().from(domainEvents).where(and(eq(domainEvents.subjectType, 'service_request'), eq(domainEvents.subjectId, r.id)));
    expect(events.map((e) => e.type)).toEqual(['service_request.created', 'service_request.accepted']);
    const again = expectError(await api('POST', `/prestataire/requests/${r.id}/accept`, p.token, { starts_at: f.inDays(6) }), 409, 'conflict');
    expect(again.current_status).toBe('accepted');
    expect((await api('GET', `/client/requests/${r.id}`, client.token)).json().data.appointment).toMatchObject({ id: appointment.id });
  });

  it('takes an amount and duration given, and checks the slot', async () => {
    const p = await f.prestataire([serviceId]);
    const first = await f.request(client, serviceId, { prestataireId: p.user.id });
    const second = await f.request(client, serviceId, { prestataireId: p.user.id });
    const startsAt = f.inDays(7, 14);
    const ok = await api('POST', `/prestataire/requests/${first.id}/accept`, p.token, { starts_at: startsAt, amount_cents: 15000, duration_minutes: 120 });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().data.appointment).toMatchObject({ price_cents: 15000 });
    // The same time again: booked.
    expectError(await api('POST', `/prestataire/requests/${second.id}/accept`, p.token, { starts_at: startsAt }), 409, 'conflict');
    const past = await api('POST', `/prestataire/requests/${second.id}/accept`, p.token, { starts_at: new Date(Date.now() + 10 * 60_000).toISOString() });
    expect(expectError(past, 422, 'validation_error').errors).toHaveProperty('starts_at');
    expect(expectError(await api('POST', `/prestataire/requests/${second.id}/accept`, p.token, {}), 422, 'validation_error').errors).toHaveProperty('starts_at');
    const [row] = await t.database.db.select().from(serviceRequests).where(eq(serviceRequests.id, second.id));
    expect(row!.status).toBe('open');
    expect(await t.database.db.select().from(appointments).where(eq(appointments.serviceRequestId, second.id))).toHaveLength(0);
  });

  it('answers 409 for an open request it can see (offers only) and 404 for one it cannot', async () => {
    const p = await f.prestataire([serviceId]);
    const rival = await f.prestataire([serviceId]);
    const open = await f.request(client, serviceId);
    const theirs = await f.request(client, serviceId, { prestataireId: rival.user.id });
    expectError(await api('POST', `/prestataire/requests/${open.id}/accept`, p.token, { starts_at: f.inDays(3) }), 409, 'conflict');
    expectError(await api('POST', `/prestataire/requests/${open.id}/refuse`, p.token, {}), 409, 'conflict');
    expectError(await api('POST', `/prestataire/requests/${theirs.id}/accept`, p.token, { starts_at: f.inDays(3) }), 404, 'not_found');
    expectError(await api('POST', `/prestataire/requests/${theirs.id}/refuse`, p.token, {}), 404, 'not_found');
    expectError(await api('POST', `/prestataire/requests/${theirs.id}/accept`, client.token, { starts_at: f.inDays(3) }), 403, 'forbidden');
    expectError(await api('POST', `/prestataire/requests/${theirs.id}/refuse`), 401, 'unauthenticated');
  });
});

describe('POST /prestataire/requests/{id}/refuse', () => {
  it('refuses a direct request, closing its pending offer; refusing again is 409', async () => {
    const p = await f.prestataire([serviceId]);
    const r = await f.request(client, serviceId, { prestataireId: p.user.id });
    const offer = (await f.offer(p, r.id)).json().data;
    const res = await api('POST', `/prestataire/requests/${r.id}/refuse`, p.token, { reason: 'Pas disponible ce mois-ci' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ status: 'refused', refusal_reason: 'Pas disponible ce mois-ci' });
    const [o] = await t.database.db.select().from(offers).where(eq(offers.id, offer.id));
    expect(o!.status).toBe('refused');
    const again = expectError(await api('POST', `/prestataire/requests/${r.id}/refuse`, p.token), 409, 'conflict');
    expect(again.current_status).toBe('refused');
    expectError(await api('POST', `/client/requests/${r.id}/cancel`, client.token), 409, 'conflict');
  });
});
