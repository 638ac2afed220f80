import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { serviceRequests } from '../src/db/schema/index.js';
import { todayIn } from '../src/lib/time.js';
import { lifecycleFixtures, nonAdminTokens } from './admin-lifecycle-fixtures.js';
import {
  bearer,
  buildTestApp,
  createAdmin,
  createClient,
  createPrestataire,
  expectAdminOnly,
  expectError,
  type NonAdminTokens,
  type TestApp,
  type TestUser,
} from './helpers.js';

let t: TestApp;
let admin: TestUser;
let tokens: NonAdminTokens;
let fx: ReturnType<typeof lifecycleFixtures>;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '100000' });
  fx = lifecycleFixtures(t);
  admin = await createAdmin(t);
  tokens = await nonAdminTokens(t);
});
afterAll(() => t.close());

function get(url: string, token = admin.token) {
  return t.app.inject({ method: 'GET', url: `/api/v1/admin${url}`, headers: bearer(token) });
}
interface Page<T> {
  data: T[];
  meta: { total: number; current_page: number; per_page: number; last_page: number };
}
const page = <T>(res: { json(): unknown }) => res.json() as Page<T>;

/** Two clients, two prestataires and a handful of requests, offers and appointments between them. */
async function scene() {
  const category = await fx.category();
  const brakes = await fx.service(category.id, { name: 'Freins' });
  const oil = await fx.service(category.id, { name: 'Vidange' });
  const [alice, bob] = [await createClient(t, { firstName: 'Alice' }), await createClient(t, { firstName: 'Bob' })];
  const [garage, other] = [await createPrestataire(t, { status: 'validated' }), await createPrestataire(t, { status: 'validated' })];
  const aliceCar = await fx.vehicle(alice.user.id, { make: 'Peugeot', model: '208', plate: 'AA-111-AA' });
  const bobCar = await fx.vehicle(bob.user.id);
  const now = Date.now();
  const old = await fx.request({ clientId: alice.user.id, vehicleId: aliceCar.id, serviceId: brakes.id, status: 'accepted', createdAt: new Date(now - 10 * DAY) });
  const quoted = await fx.request({ clientId: bob.user.id, vehicleId: bobCar.id, serviceId: oil.id, status: 'quoted', createdAt: new Date(now - 2 * DAY) });
  const direct = await fx.request({ clientId: alice.user.id, vehicleId: aliceCar.id, serviceId: oil.id, prestataireId: other.user.id, createdAt: new Date(now - HOUR) });
  const accepted = await fx.offer({ serviceRequestId: old.id, prestataireId: garage.user.id, status: 'accepted', amountCents: 15_000 });
  await fx.offer({ serviceRequestId: old.id, prestataireId: other.user.id, status: 'refused' });
  await fx.offer({ serviceRequestId: quoted.id, prestataireId: garage.user.id });
  await fx.photo(old.id, 'public/requests/2026/11/3f0c2a4e-1111-4a4a-9a9a-000000000001.jpg');
  await fx.photo(old.id, 'requests/2026/11/3f0c2a4e-1111-4a4a-9a9a-000000000002.jpg');
  const appointment = await fx.appointment({
    serviceRequestId: old.id,
    offerId: accepted.id,
    clientId: alice.user.id,
    prestataireId: garage.user.id,
    vehicleId: aliceCar.id,
    serviceId: brakes.id,
    startsAt: new Date(now + 3 * DAY),
    priceCents: 15_000,
    priceAdjustmentAmountCents: 17_500,
    priceAdjustmentReason: 'Disques usés',
    priceAdjustmentStatus: 'pending',
    priceAdjustmentRequestedAt: new Date(now),
  });
  const extraRequest = await fx.request({ clientId: bob.user.id, vehicleId: bobCar.id, serviceId: brakes.id, status: 'accepted', createdAt: new Date(now - 20 * DAY) });
  const cancelled = await fx.appointment({
    serviceRequestId: extraRequest.id,
    clientId: bob.user.id,
    prestataireId: other.user.id,
    vehicleId: bobCar.id,
    serviceId: brakes.id,
    startsAt: new Date(now - 5 * DAY),
    status: 'cancelled',
    cancelledAt: new Date(now - 6 * DAY),
    cancelledBy: bob.user.id,
    cancelReason: 'Voiture vendue',
    cancellationFeeCents: 0,
  });
  return { brakes, oil, alice, bob, garage, other, aliceCar, old, quoted, direct, extraRequest, appointment, cancelled };
}

describe('admin service requests', () => {
  it('lists requests newest first with filters, and shows one with offers, photos and appointment', async () => {
    const s = await scene();
    const mine = (url: string) => get(`/service-requests${url}${url.includes('?') ? '&' : '?'}per_page=100`);
    const ids = (res: { json(): unknown }) => page<{ id: number }>(res).data.map((r) => r.id);
    const ours = new Set([s.old.id, s.quoted.id, s.direct.id, s.extraRequest.id]);
    const all = page<{ id: number }>(await mine(''));
    expect(all.data.map((r) => r.id).filter((id) => ours.has(id))).toEqual([s.direct.id, s.quoted.id, s.old.id, s.extraRequest.id]);

    expect(ids(await mine(`?client_id=${s.alice.user.id}`))).toEqual([s.direct.id, s.old.id]);
    expect(ids(await mine(`?status=quoted&client_id=${s.bob.user.id}`))).toEqual([s.quoted.id]);
    expect(ids(await mine(`?service_id=${s.oil.id}`))).toEqual([s.direct.id, s.quoted.id]);
    // A prestataire's requests: aimed at it, or that it made an offer on.
    expect(ids(await mine(`?prestataire_id=${s.other.user.id}`))).toEqual([s.direct.id, s.old.id]);
    expect(ids(await mine(`?prestataire_id=${s.garage.user.id}`))).toEqual([s.quoted.id, s.old.id]);
    const since = new Date(Date.now() - 3 * DAY).toISOString();
    expect(ids(await mine(`?client_id=${s.bob.user.id}&from=${encodeURIComponent(since)}`))).toEqual([s.quoted.id]);
    // Days are the platform's (Europe/Paris by default).
    const tenDaysAgo = todayIn('Europe/Paris', new Date(Date.now() - 10 * DAY));
    const fifteenDaysAgo = todayIn('Europe/Paris', new Date(Date.now() - 15 * DAY));
    expect(ids(await mine(`?client_id=${s.alice.user.id}&from=${fifteenDaysAgo}&to=${tenDaysAgo}`))).toEqual([s.old.id]);

    const paged = page(await get(`/service-requests?client_id=${s.alice.user.id}&per_page=1&page=2`));
    expect(paged.meta).toEqual({ current_page: 2, per_page: 1, total: 2, last_page: 2 });
    expect(paged.data.map((r) => (r as { id: number }).id)).toEqual([s.old.id]);

    const item = all.data.find((r) => r.id === s.old.id);
    expect(item).toMatchObject({
      status: 'accepted',
      offers_count: 2,
      client: { id: s.alice.user.id, first_name: 'Alice' },
      vehicle: { id: s.aliceCar.id, make: 'Peugeot', model: '208', plate: 'AA-111-AA' },
      service: { id: s.brakes.id, name: 'Freins' },
    });

    const shown = await get(`/service-requests/${s.old.id}`);
    expect(shown.statusCode, shown.body).toBe(200);
    const detail = (shown.json() as { data: Record<string, unknown> }).data as {
      offers: { status: string; prestataire: { id: number; business_name: string | null } }[];
      photos: { url: string | null }[];
      appointment: { id: number; price_adjustment: unknown; cancellation: unknown };
    };
    expect(detail.offers.map((o) => [o.status, o.prestataire.id])).toEqual([
      ['accepted', s.garage.user.id],
      ['refused', s.other.user.id],
    ]);
    expect(detail.offers[0]!.prestataire.business_name).toBe(s.garage.profile!.businessName);
    expect(detail.photos.map((p) => p.url)).toEqual(['/api/v1/media/public/requests/2026/11/3f0c2a4e-1111-4a4a-9a9a-000000000001.jpg', null]);
    expect(detail.appointment).toMatchObject({
      id: s.appointment.id,
      price_adjustment: { amount_cents: 17_500, reason: 'Disques usés', status: 'pending' },
      cancellation: null,
    });

    const direct = (await get(`/service-requests/${s.direct.id}`)).json() as { data: { appointment: unknown; offers: unknown[]; prestataire_id: number } };
    expect(direct.data).toMatchObject({ appointment: null, offers: [], prestataire_id: s.other.user.id });
  });

  it('refuses bad filters and unknown ids', async () => {
    expectError(await get('/service-requests?status=pending'), 422, 'validation_error');
    expectError(await get('/service-requests?from=yesterday'), 422, 'validation_error');
    expectError(await get('/service-requests?from=2026-02-30'), 422, 'validation_error');
    const reversed = expectError(await get('/service-requests?from=2026-11-20&to=2026-11-10'), 422, 'validation_error');
    expect(Object.keys(reversed.errors!)).toEqual(['to']);
    expectError(await get('/service-requests?client_id=0'), 422, 'validation_error');
    expectError(await get('/service-requests?per_page=500'), 422, 'validation_error');
    expectError(await get('/service-requests/999999'), 404, 'not_found');
    expectError(await get('/service-requests/abc'), 422, 'validation_error');
  });
});

describe('admin appointments', () => {
  it('lists appointments with filters and shows one with both parties, the vehicle, the service and any cancellation', async () => {
    const s = await scene();
    const ids = (res: { json(): unknown }) => page<{ id: number }>(res).data.map((r) => r.id);
    expect(ids(await get(`/appointments?client_id=${s.alice.user.id}`))).toEqual([s.appointment.id]);
    expect(ids(await get(`/appointments?prestataire_id=${s.other.user.id}`))).toEqual([s.cancelled.id]);
    expect(ids(await get(`/appointments?status=cancelled&prestataire_id=${s.other.user.id}`))).toEqual([s.cancelled.id]);
    expect(ids(await get(`/appointments?status=scheduled&prestataire_id=${s.other.user.id}`))).toEqual([]);
    const tomorrow = new Date(Date.now() + DAY).toISOString();
    const both = page<{ id: number }>(await get(`/appointments?per_page=100`)).data.map((a) => a.id).filter((id) => id === s.appointment.id || id === s.cancelled.id);
    // Latest start first.
    expect(both).toEqual([s.appointment.id, s.cancelled.id]);
    const upcoming = ids(await get(`/appointments?from=${encodeURIComponent(tomorrow)}&per_page=100`));
    expect(upcoming).toContain(s.appointment.id);
    expect(upcoming).not.toContain(s.cancelled.id);

    const shown = await get(`/appointments/${s.cancelled.id}`);
    expect(shown.statusCode, shown.body).toBe(200);
    expect((shown.json() as { data: unknown }).data).toMatchObject({
      id: s.cancelled.id,
      status: 'cancelled',
      service_request_id: s.extraRequest.id,
      client: { id: s.bob.user.id, first_name: 'Bob' },
      prestataire: { id: s.other.user.id, business_name: s.other.profile!.businessName },
      vehicle: { id: s.cancelled.vehicleId },
      service: { id: s.brakes.id },
      price_adjustment: null,
      cancellation: { reason: 'Voiture vendue', cancelled_by: s.bob.user.id, fee_cents: 0 },
    });
    expectError(await get('/appointments/999999'), 404, 'not_found');
    expectError(await get('/appointments?status=done'), 422, 'validation_error');
    expectError(await get('/appointments?to=2026-13-01'), 422, 'validation_error');
  });

  it('are read by administrators only', async () => {
    const s = await scene();
    await expectAdminOnly(t, tokens, 'GET', '/admin/service-requests');
    await expectAdminOnly(t, tokens, 'GET', `/admin/service-requests/${s.old.id}`);
    await expectAdminOnly(t, tokens, 'GET', '/admin/appointments');
    await expectAdminOnly(t, tokens, 'GET', `/admin/appointments/${s.appointment.id}`);
    // Not even the request's own client or prestataire reads it here.
    expectError(await get(`/service-requests/${s.old.id}`, s.alice.token), 403, 'forbidden');
    expectError(await get(`/appointments/${s.appointment.id}`, s.garage.token), 403, 'forbidden');
    const [row] = await t.database.db.select().from(serviceRequests).where(eq(serviceRequests.id, s.old.id));
    expect(row?.status).toBe('accepted');
  });
});
