import { DateTime } from 'luxon';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, buildTestApp, unique, validSiret, type TestApp } from './helpers.js';

// The whole journey, through HTTP only, as the apps drive it: an administrator validates a
// prestataire who opens its calendar; a client asks, the prestataire quotes a free slot, the client
// accepts; the work is started, ended, paid and completed.

const ADMIN = { email: `admin-journey-${Date.now()}@example.test`, password: 'journey admin password' };
let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp({
    SEED_REFERENCE_DATA: 'true',
    BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
    BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
    RATE_LIMIT_PUBLIC: '100000',
    RATE_LIMIT_AUTHENTICATED: '100000',
  });
});
afterAll(async () => {
  await t.close();
});

async function call(method: 'GET' | 'POST' | 'PUT', url: string, token?: string, payload?: object) {
  const res = await t.app.inject({ method, url: `/api/v1${url}`, headers: token ? bearer(token) : {}, ...(payload === undefined ? {} : { payload }) });
  // The API's answers, as a client reads them: JSON of any shape.
  return { status: res.statusCode, body: res.json() };
}

async function ok(method: 'GET' | 'POST' | 'PUT', url: string, token?: string, payload?: object, status = 200) {
  const res = await call(method, url, token, payload);
  expect(res.status, `${method} ${url}: ${JSON.stringify(res.body)}`).toBe(status);
  return res.body;
}

/**
 * A time zone where it is now between 01:00 and 20:00, so that a slot an hour or two from now is
 * still today there: the work must start on the appointment's local day.
 */
function zoneWithDaylightAhead(): string {
  const zones = ['Europe/Paris', 'America/New_York', 'America/Los_Angeles', 'Pacific/Honolulu', 'Asia/Tokyo', 'Asia/Kolkata', 'Pacific/Auckland', 'America/Sao_Paulo'];
  const zone = zones.find((z) => {
    const hour = DateTime.now().setZone(z).hour;
    return hour >= 1 && hour < 20;
  });
  if (!zone) throw new Error('no zone in daylight');
  return zone;
}

describe('the journey from a request to a completed appointment', () => {
  it('runs through the API alone', async () => {
    const n = unique();
    const adminToken = (await ok('POST', '/auth/login', undefined, ADMIN)).data.token as string;

    // A prestataire registers, sets its zone and radius, and is validated.
    const pro = await ok(
      'POST',
      '/auth/register/prestataire',
      undefined,
      {
        first_name: 'Paul',
        last_name: 'Garagiste',
        email: `pro-journey-${n}@example.test`,
        password: 'a long password',
        password_confirmation: 'a long password',
        business_name: `Garage du Parc ${n}`,
        siret: validSiret(70_000 + n),
        address: '3 place Bellecour',
        postal_code: '69002',
        city: 'Lyon',
        latitude: 45.7578,
        longitude: 4.832,
      },
      201,
    );
    const proToken = pro.data.token as string;
    const proId = pro.data.user.id as number;
    const zone = zoneWithDaylightAhead();
    await ok('PUT', '/prestataire/profile', proToken, { timezone: zone, service_radius_km: 30 });
    await ok('POST', `/admin/prestataires/${proId}/validate`, adminToken, {});

    // It opens every day, all day, and offers an oil change at its price.
    const services = (await ok('GET', '/services?per_page=100')).data as { id: number; slug: string }[];
    const service = services[0]!;
    await ok('PUT', '/prestataire/availabilities', proToken, {
      availabilities: [1, 2, 3, 4, 5, 6, 7].map((d) => ({ day_of_week: d, start_time: '00:00', end_time: '24:00' })),
    });
    await ok('PUT', '/prestataire/services', proToken, { services: [{ service_id: service.id, price_cents: 8900, duration_minutes: 60 }] });

    // A client registers, adds a vehicle and asks nearby.
    const client = await ok(
      'POST',
      '/auth/register/client',
      undefined,
      { first_name: 'Léa', last_name: 'Martin', email: `lea-journey-${n}@example.test`, password: 'a long password', password_confirmation: 'a long password' },
      201,
    );
    const clientToken = client.data.token as string;
    const vehicle = await ok('POST', '/vehicles', clientToken, { make: 'Renault', model: 'Clio', year: 2020 }, 201);
    const request = await ok(
      'POST',
      '/service-requests',
      clientToken,
      { vehicle_id: vehicle.data.id, service_id: service.id, description: 'Vidange et filtres', latitude: 45.76, longitude: 4.83 },
      201,
    );
    expect(request.data.status).toBe('open');

    // The prestataire sees it, picks its first free slot and quotes.
    const seen = await ok('GET', '/prestataire/requests', proToken);
    expect(seen.data.map((r: { id: number }) => r.id)).toContain(request.data.id);
    const upcoming = await ok('GET', `/prestataires/${proId}/availability/upcoming?days=1&service_id=${service.id}`);
    const slot = upcoming.data[0].slots[0] as { starts_at: string; ends_at: string };
    expect(slot).toBeDefined();
    const offer = await ok(
      'POST',
      `/service-requests/${request.data.id}/offers`,
      proToken,
      { amount_cents: 8900, proposed_start_at: slot.starts_at, duration_minutes: 60, message: 'Disponible' },
      201,
    );
    expect((await ok('GET', `/client/requests/${request.data.id}`, clientToken)).data.status).toBe('quoted');

    // The client accepts: the appointment is booked, and the slot is gone.
    const accepted = await ok('POST', `/offers/${offer.data.id}/accept`, clientToken);
    expect(accepted.data.offer.status).toBe('accepted');
    const appointmentId = accepted.data.appointment.id as number;
    expect(accepted.data.appointment).toMatchObject({ status: 'scheduled', starts_at: slot.starts_at, price_cents: 8900 });
    const after = await ok('GET', `/prestataires/${proId}/availability/upcoming?days=1&service_id=${service.id}`);
    expect(after.data[0].slots.map((s: { starts_at: string }) => s.starts_at)).not.toContain(slot.starts_at);

    // The prestataire starts and ends the work; the client pays and completes.
    expect((await ok('POST', `/appointments/${appointmentId}/start`, proToken)).data.status).toBe('in_progress');
    expect((await ok('POST', `/appointments/${appointmentId}/end`, proToken)).data.status).toBe('ended');
    await pay(appointmentId, clientToken);
    expect((await ok('POST', `/appointments/${appointmentId}/complete`, clientToken)).data.status).toBe('completed');
    expect((await ok('GET', `/client/requests/${request.data.id}`, clientToken)).data.status).toBe('completed');

    // Each side sees it in its lists; the back office sees all of it.
    expect((await ok('GET', '/appointments', clientToken)).data.map((a: { id: number }) => a.id)).toContain(appointmentId);
    expect((await ok('GET', `/appointments/${appointmentId}`, proToken)).data.status).toBe('completed');
    expect((await ok('GET', `/admin/appointments/${appointmentId}`, adminToken)).data.status).toBe('completed');
    // A move the machine does not allow any more answers 409 with the state it is in.
    const again = await call('POST', `/appointments/${appointmentId}/start`, proToken);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: 'conflict', current_status: 'completed' });
  });
});

/** The client pays the final price. */
async function pay(appointmentId: number, clientToken: string) {
  const { appointments } = await import('../src/db/schema/index.js');
  const { eq } = await import('drizzle-orm');
  // The payment routes come with the payments module; until then the payment is recorded as the
  // processor's webhook would record it.
  await t.database.db.update(appointments).set({ paidAt: new Date() }).where(eq(appointments.id, appointmentId));
  expect(clientToken).toBeTruthy();
}
