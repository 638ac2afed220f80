import { randomBytes } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, cities, domainEvents, offers, serviceRequests, users } from '../src/db/schema/index.js';
import { bearer, buildTestApp, createAdmin, createClient, createPrestataire, expectAdminOnly, expectError, unique, type TestApp, type TestUser } from './helpers.js';
import { GRENOBLE, lifecycleFixtures, LYON } from './lifecycle-fixtures.js';

let t: TestApp;
const f = lifecycleFixtures(() => t);
const { api } = f;

let client: TestUser;
let other: TestUser;
let admin: TestUser;
let serviceId: number;
let garage: TestUser;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_PUBLIC: '100000', RATE_LIMIT_AUTHENTICATED: '100000' });
  [client, other, admin] = await Promise.all([createClient(t), createClient(t), createAdmin(t)]);
  serviceId = (await f.service()).id;
  garage = await f.prestataire([serviceId]);
});
afterAll(async () => {
  await t.close();
});

const JPEG = Buffer.from(
  '/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAP//////////////////////////////////////////////////////////////////////////////////////wgALCAABAAEBAREA/8QAFBABAAAAAAAAAAAAAAAAAAAAAP/aAAgBAQABPxA=',
  'base64',
);

function upload(token: string | undefined, requestId: number, files: { name?: string; data: Buffer }[]) {
  const boundary = `----vitest${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const [i, file] of files.entries()) {
    chunks.push(
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${file.name ?? 'photos'}"; filename="p${i}.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`),
      file.data,
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return t.app.inject({
    method: 'POST',
    url: `/api/v1/service-requests/${requestId}/photos`,
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, ...(token ? bearer(token) : {}) },
    payload: Buffer.concat(chunks),
  });
}

describe('POST /service-requests', () => {
  it('creates an open request that expires after the request lifetime, and publishes it', async () => {
    const v = await f.vehicle(client);
    const before = Date.now();
    const res = await api('POST', '/service-requests', client.token, {
      vehicle_id: v.id,
      service_id: serviceId,
      description: 'Voyant moteur allumé depuis hier',
      ...LYON,
      preferred_dates: [f.inDays(4)],
      status: 'accepted',
      client_id: other.user.id,
    });
    expect(res.statusCode, res.body).toBe(201);
    const data = res.json().data;
    expect(data).toMatchObject({ status: 'open', client_id: client.user.id, vehicle_id: v.id, service_id: serviceId, prestataire_id: null, direct: false });
    expect(data.preferred_dates).toEqual([f.inDays(4)]);
    const expires = Date.parse(data.expires_at);
    expect(expires).toBeGreaterThanOrEqual(before + 14 * 86_400_000 - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 14 * 86_400_000 + 1000);
    const events = await t.database.db.select().from(domainEvents).where(and(eq(domainEvents.type, 'service_request.created'), eq(domainEvents.subjectId, data.id)));
    expect(events).toHaveLength(1);
  });

  it('takes a city’s coordinates when given a city_id', async () => {
    const [city] = await t.database.db
      .insert(cities)
      .values({ inseeCode: `T${unique()}`, name: 'Villeurbanne', postalCodes: ['69100'], departmentCode: '69', latitude: 45.7719, longitude: 4.8902 })
      .returning();
    const v = await f.vehicle(client);
    const res = await api('POST', '/service-requests', client.token, { vehicle_id: v.id, service_id: serviceId, description: 'Pneus à changer', city_id: city!.id });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().data).toMatchObject({ latitude: 45.7719, longitude: 4.8902, city_id: city!.id });
    const missing = await api('POST', '/service-requests', client.token, { vehicle_id: v.id, service_id: serviceId, description: 'Pneus à changer', city_id: 999999 });
    expect(expectError(missing, 422, 'validation_error').errors).toHaveProperty('city_id');
  });

  it('accepts a direct request to a validated prestataire offering the service', async () => {
    const data = await f.request(client, serviceId, { prestataireId: garage.user.id });
    expect(data).toMatchObject({ status: 'open' });
    const [row] = await t.database.db.select().from(serviceRequests).where(eq(serviceRequests.id, data.id));
    expect(row!.prestataireId).toBe(garage.user.id);
  });

  it('refuses references that are not the caller’s or not usable, naming each field', async () => {
    const foreign = await f.vehicle(other);
    const inactive = await f.service({ active: false });
    const pending = await createPrestataire(t, { status: 'pending' });
    const offersOther = await f.prestataire([(await f.service()).id]);
    const res = await api('POST', '/service-requests', client.token, {
      vehicle_id: foreign.id,
      service_id: inactive.id,
      description: 'Révision des 60 000 km',
      ...LYON,
      prestataire_id: pending.user.id,
    });
    const errors = expectError(res, 422, 'validation_error').errors!;
    expect(Object.keys(errors).sort()).toEqual(['prestataire_id', 'service_id', 'vehicle_id']);

    const v = await f.vehicle(client);
    const notOffering = await api('POST', '/service-requests', client.token, {
      vehicle_id: v.id,
      service_id: serviceId,
      description: 'Révision des 60 000 km',
      ...LYON,
      prestataire_id: offersOther.user.id,
    });
    expect(Object.keys(expectError(notOffering, 422, 'validation_error').errors!)).toEqual(['prestataire_id']);
  });

  it('needs a place and a description', async () => {
    const v = await f.vehicle(client);
    const res = await api('POST', '/service-requests', client.token, { vehicle_id: v.id, service_id: serviceId, description: 'court', latitude: 45 });
    const errors = expectError(res, 422, 'validation_error').errors!;
    expect(errors).toHaveProperty('description');
    expect(errors).toHaveProperty('longitude');
    const nowhere = await api('POST', '/service-requests', client.token, { vehicle_id: v.id, service_id: serviceId, description: 'Rien ne va plus' });
    expect(expectError(nowhere, 422, 'validation_error').errors).toHaveProperty('latitude');
  });

  it('is for clients only', async () => {
    const body = { vehicle_id: 1, service_id: serviceId, description: 'Bruit au démarrage', ...LYON };
    expectError(await api('POST', '/service-requests', garage.token, body), 403, 'forbidden');
    expectError(await api('POST', '/service-requests', admin.token, body), 403, 'forbidden');
    expectError(await api('POST', '/service-requests', undefined, body), 401, 'unauthenticated');
  });
});

describe('GET /service-requests and /service-requests/{id}', () => {
  it('lists a client’s own, an admin all, a prestataire those within reach', async () => {
    const mine = await f.request(client, serviceId);
    const far = await f.request(client, serviceId, { at: GRENOBLE });
    const theirs = await f.request(other, serviceId);

    const ids = async (token: string, query = '') =>
      ((await api('GET', `/service-requests?per_page=100${query}`, token)).json().data as { id: number }[]).map((r) => r.id);
    const own = await ids(client.token);
    expect(own).toContain(mine.id);
    expect(own).not.toContain(theirs.id);
    const all = await ids(admin.token);
    expect(all).toEqual(expect.arrayContaining([mine.id, theirs.id, far.id]));
    const seen = await ids(garage.token);
    expect(seen).toEqual(expect.arrayContaining([mine.id, theirs.id]));
    expect(seen).not.toContain(far.id);
    expect(await ids(client.token, '&status=cancelled')).not.toContain(mine.id);

    const page = (await api('GET', '/service-requests?per_page=1', client.token)).json();
    expect(page.meta).toMatchObject({ current_page: 1, per_page: 1 });
    expectError(await api('GET', '/service-requests?per_page=1000', client.token), 422, 'validation_error');
    expectError(await api('GET', '/service-requests'), 401, 'unauthenticated');
  });

  it('shows a request to its client, a prestataire within reach and an admin; 404 to anyone else', async () => {
    const r = await f.request(client, serviceId);
    const far = await f.prestataire([serviceId]);
    await t.database.db.update(serviceRequests).set(GRENOBLE).where(eq(serviceRequests.id, r.id));
    const show = (token: string) => api('GET', `/service-requests/${r.id}`, token);
    expect((await show(client.token)).json().data).toMatchObject({ id: r.id, photos: [], appointment_id: null });
    expect((await show(admin.token)).statusCode).toBe(200);
    expectError(await show(other.token), 404, 'not_found');
    expectError(await show(far.token), 404, 'not_found');
    await t.database.db.update(serviceRequests).set(LYON).where(eq(serviceRequests.id, r.id));
    expect((await show(far.token)).statusCode).toBe(200);
    expectError(await api('GET', '/service-requests/abc', client.token), 422, 'validation_error');
  });
});

describe('editing and deleting', () => {
  it('edits an open request with no offer (PATCH a field, PUT the whole body)', async () => {
    const r = await f.request(client, serviceId);
    const patched = await api('PATCH', `/service-requests/${r.id}`, client.token, { description: 'Finalement : vidange et filtres' });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json().data).toMatchObject({ description: 'Finalement : vidange et filtres', latitude: LYON.latitude });
    const v = await f.vehicle(client);
    const put = await api('PUT', `/service-requests/${r.id}`, client.token, {
      vehicle_id: v.id,
      service_id: serviceId,
      description: 'Remplacer la courroie de distribution',
      latitude: 45.76,
      longitude: 4.84,
    });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json().data).toMatchObject({ vehicle_id: v.id, latitude: 45.76, longitude: 4.84 });
    const foreign = await f.vehicle(other);
    expect(expectError(await api('PATCH', `/service-requests/${r.id}`, client.token, { vehicle_id: foreign.id }), 422, 'validation_error').errors).toHaveProperty('vehicle_id');
    const logged = await t.database.db.select().from(activityLog).where(and(eq(activityLog.action, 'service_request.updated'), eq(activityLog.subjectId, r.id)));
    expect(logged).toHaveLength(2);
  });

  it('refuses edits and deletion once an offer came in (409), and to anyone but its client', async () => {
    const r = await f.request(client, serviceId);
    expectError(await api('PATCH', `/service-requests/${r.id}`, other.token, { description: 'Pas ma demande du tout' }), 404, 'not_found');
    expectError(await api('DELETE', `/service-requests/${r.id}`, other.token), 404, 'not_found');
    expectError(await api('PATCH', `/service-requests/${r.id}`, garage.token, { description: 'Pas ma demande du tout' }), 403, 'forbidden');
    expectError(await api('DELETE', `/service-requests/${r.id}`), 401, 'unauthenticated');
    expect((await f.offer(garage, r.id)).statusCode).toBe(201);
    const edit = expectError(await api('PATCH', `/service-requests/${r.id}`, client.token, { description: 'Encore un changement' }), 409, 'conflict');
    expect(edit.current_status).toBe('quoted');
    expectError(await api('DELETE', `/service-requests/${r.id}`, client.token), 409, 'conflict');
  });

  it('deletes an open request with no offer', async () => {
    const r = await f.request(client, serviceId);
    const res = await api('DELETE', `/service-requests/${r.id}`, client.token);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().message).toBe('Service request deleted');
    expectError(await api('GET', `/service-requests/${r.id}`, client.token), 404, 'not_found');
  });
});

describe('POST /service-requests/{id}/photos', () => {
  it('attaches images, at most 10 per request, for its client only', async () => {
    const r = await f.request(client, serviceId);
    const res = await upload(client.token, r.id, [{ data: JPEG }, { data: JPEG }]);
    expect(res.statusCode, res.body).toBe(201);
    const photos = res.json().data as { url: string }[];
    expect(photos).toHaveLength(2);
    expect(photos[0]!.url).toMatch(/^\/api\/v1\/media\/public\/request-photos\//);
    const served = await t.app.inject({ method: 'GET', url: photos[0]!.url });
    expect(served.statusCode).toBe(200);

    const tooMany = await upload(client.token, r.id, Array.from({ length: 9 }, () => ({ data: JPEG })));
    expect(expectError(tooMany, 422, 'validation_error').errors).toHaveProperty('photos');
    expect((await upload(client.token, r.id, Array.from({ length: 8 }, () => ({ data: JPEG })))).statusCode).toBe(201);
    expect((await api('GET', `/client/requests/${r.id}`, client.token)).json().data.photos).toHaveLength(10);

    expectError(await upload(client.token, r.id, [{ data: Buffer.from('not an image at all') }]), 422, 'validation_error');
    expectError(await upload(other.token, r.id, [{ data: JPEG }]), 404, 'not_found');
    expectError(await upload(garage.token, r.id, [{ data: JPEG }]), 403, 'forbidden');
    expectError(await upload(undefined, r.id, [{ data: JPEG }]), 401, 'unauthenticated');
    expectError(await api('POST', `/service-requests/${r.id}/photos`, client.token, { photos: [] }), 400, 'bad_request');
  });
});

describe('client views', () => {
  it('lists the client’s requests with offer counts, and shows one with its offers', async () => {
    const r = await f.request(client, serviceId);
    expect((await f.offer(garage, r.id)).statusCode).toBe(201);
    const list = await api('GET', '/client/requests?per_page=100', client.token);
    expect(list.statusCode).toBe(200);
    const item = (list.json().data as { id: number }[]).find((x) => x.id === r.id);
    expect(item).toMatchObject({ status: 'quoted', offers_count: 1, appointment_id: null });
    expect((list.json().data as { client_id: number }[]).every((x) => x.client_id === client.user.id)).toBe(true);
    const quoted = await api('GET', '/client/requests?status=quoted&per_page=100', client.token);
    expect((quoted.json().data as { status: string }[]).every((x) => x.status === 'quoted')).toBe(true);

    const show = await api('GET', `/client/requests/${r.id}`, client.token);
    expect(show.statusCode).toBe(200);
    expect(show.json().data.offers).toHaveLength(1);
    expect(show.json().data.offers[0].prestataire).toMatchObject({ id: garage.user.id, business_name: garage.profile!.businessName });
    expect(show.json().data.appointment).toBeNull();
    expectError(await api('GET', `/client/requests/${r.id}`, other.token), 404, 'not_found');
    expectError(await api('GET', `/client/requests/${r.id}`, garage.token), 403, 'forbidden');
    expectError(await api('GET', '/client/requests'), 401, 'unauthenticated');
  });

  it('cancels an open or quoted request and refuses its pending offers; a second cancel is 409', async () => {
    const r = await f.request(client, serviceId);
    const offer = (await f.offer(garage, r.id)).json().data;
    expectError(await api('POST', `/client/requests/${r.id}/cancel`, other.token, {}), 404, 'not_found');
    const res = await api('POST', `/client/requests/${r.id}/cancel`, client.token, { reason: 'Réparé par un ami' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ status: 'cancelled', cancel_reason: 'Réparé par un ami' });
    const [o] = await t.database.db.select().from(offers).where(eq(offers.id, offer.id));
    expect(o!.status).toBe('refused');
    const again = expectError(await api('POST', `/client/requests/${r.id}/cancel`, client.token), 409, 'conflict');
    expect(again.current_status).toBe('cancelled');
    const events = await t.database.db.select().from(domainEvents).where(and(eq(domainEvents.type, 'service_request.cancelled'), eq(domainEvents.subjectId, r.id)));
    expect(events).toHaveLength(1);
  });
});

describe('POST /admin/service-requests/{id}/cancel', () => {
  it('cancels with a required reason, for admins only', async () => {
    const r = await f.request(client, serviceId);
    const suspended = await createAdmin(t);
    await t.database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, suspended.user.id));
    const tokens = { client: client.token, prestataire: garage.token, suspendedAdmin: suspended.token };
    await expectAdminOnly(t, tokens, 'POST', `/admin/service-requests/${r.id}/cancel`, { reason: 'Contenu abusif' });
    expectError(await api('POST', `/admin/service-requests/${r.id}/cancel`, admin.token, {}), 422, 'validation_error');
    const res = await api('POST', `/admin/service-requests/${r.id}/cancel`, admin.token, { reason: 'Contenu abusif' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ status: 'cancelled', cancel_reason: 'Contenu abusif' });
    expectError(await api('POST', `/admin/service-requests/${r.id}/cancel`, admin.token, { reason: 'Contenu abusif' }), 409, 'conflict');
    expectError(await api('POST', '/admin/service-requests/99999999/cancel', admin.token, { reason: 'Contenu abusif' }), 404, 'not_found');
  });
});
