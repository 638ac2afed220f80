import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../src/lib/context.js';
import { addDays, todayIn } from '../src/lib/time.js';
import { createPrestataireHomeService } from '../src/modules/prestataire-dashboard/home.service.js';
import { eq } from 'drizzle-orm';
import { notifications, prestataireProfiles } from '../src/db/schema/index.js';
import { lifecycleFixtures } from './admin-lifecycle-fixtures.js';
import { bearer, buildTestApp, createAdmin, createClient, createPrestataire, expectError, type TestApp, type TestUser } from './helpers.js';

let t: TestApp;
let fx: ReturnType<typeof lifecycleFixtures>;

const HOUR = 3_600_000;
// The prestataires' workshop: Lyon, place Bellecour.
const LYON = { latitude: 45.7578, longitude: 4.832 };

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '100000' });
  fx = lifecycleFixtures(t);
});
afterAll(() => t.close());

function get(url: string, token: string) {
  return t.app.inject({ method: 'GET', url: `/api/v1/prestataire${url}`, headers: bearer(token) });
}
/** A prestataire in Lyon, with profile settings the account helper does not take (time zone, radius). */
async function workshop(opts: { validated?: boolean; timezone?: string; serviceRadiusKm?: number } = {}) {
  const { validated = true, ...profile } = opts;
  const created = await createPrestataire(t, { ...(validated ? { status: 'validated' as const } : {}), profile: LYON });
  if (Object.keys(profile).length > 0) {
    await t.database.db.update(prestataireProfiles).set(profile).where(eq(prestataireProfiles.userId, created.user.id));
  }
  return created;
}

const actorOf = (u: TestUser): Actor => ({ kind: 'user', userId: u.user.id, role: 'prestataire', sessionId: 'test', requestId: 'test', ip: '127.0.0.1' });

interface Home {
  new_requests: { id: number; direct: boolean; distance_km: number | null; service: { id: number } }[];
  pending_offers: { id: number; service_request: { id: number } }[];
  today_appointments: { id: number; starts_at: string }[];
  counts: { new_requests: number; pending_offers: number; today_appointments: number; unread_notifications: number };
  timezone: string;
  today: string;
}
interface AgendaItem {
  id: number;
  status: string;
  starts_at: string;
  client: { id: number; first_name: string };
  vehicle: { make: string; model: string; plate: string | null };
  service: { id: number; name: string };
}

/** A client with a car, and a way to book it with a prestataire at a given instant (each booking on its own request). */
async function booking(serviceId: number) {
  const client = await createClient(t, { firstName: 'Léa' });
  const car = await fx.vehicle(client.user.id, { make: 'Citroën', model: 'C3', plate: 'GH-456-IJ' });
  return {
    client,
    car,
    async at(prestataireId: number, startsAt: Date, values: { status?: 'scheduled' | 'cancelled' | 'completed' } = {}) {
      const request = await fx.request({ clientId: client.user.id, vehicleId: car.id, serviceId, status: 'accepted' });
      return fx.appointment({ serviceRequestId: request.id, clientId: client.user.id, prestataireId, vehicleId: car.id, serviceId, startsAt, ...values });
    },
  };
}

describe('GET /prestataire/home', () => {
  it('lists the requests within its radius for services it offers, direct requests to it, its pending offers and counts', async () => {
    const category = await fx.category();
    const offered = await fx.service(category.id, { name: 'Plaquettes' });
    const notOffered = await fx.service(category.id, { name: 'Carrosserie' });
    const me = await workshop({ serviceRadiusKm: 30 });
    const rival = await workshop();
    await fx.offerService(me.user.id, offered.id);
    const client = await createClient(t);
    const car = await fx.vehicle(client.user.id);
    const base = { clientId: client.user.id, vehicleId: car.id };
    const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000);

    // 1° of latitude is 111.3 km on earthdistance's sphere: +0.26° is 28.9 km north, +0.28° is 31.2 km.
    const near = await fx.request({ ...base, serviceId: offered.id, latitude: 45.7719, longitude: 4.8902, createdAt: minutesAgo(10) });
    const quoted = await fx.request({ ...base, serviceId: offered.id, status: 'quoted', createdAt: minutesAgo(20) });
    const edge = await fx.request({ ...base, serviceId: offered.id, latitude: LYON.latitude + 0.26, longitude: LYON.longitude, createdAt: minutesAgo(30) });
    const direct = await fx.request({ ...base, serviceId: notOffered.id, prestataireId: me.user.id, latitude: 48.8566, longitude: 2.3522, createdAt: minutesAgo(5) });
    // Left out: beyond the radius, a service it does not offer, one it has answered, no longer open,
    // expired, aimed at another prestataire, a direct one no longer open.
    await fx.request({ ...base, serviceId: offered.id, latitude: LYON.latitude + 0.28, longitude: LYON.longitude });
    await fx.request({ ...base, serviceId: offered.id, latitude: 48.8566, longitude: 2.3522 });
    await fx.request({ ...base, serviceId: notOffered.id });
    const answered = await fx.request({ ...base, serviceId: offered.id, status: 'quoted' });
    const myOffer = await fx.offer({ serviceRequestId: answered.id, prestataireId: me.user.id });
    await fx.request({ ...base, serviceId: offered.id, status: 'accepted' });
    await fx.request({ ...base, serviceId: offered.id, expiresAt: new Date(Date.now() - HOUR) });
    await fx.request({ ...base, serviceId: offered.id, prestataireId: rival.user.id });
    await fx.request({ ...base, serviceId: offered.id, prestataireId: me.user.id, status: 'refused' });
    // Offers: its withdrawn one does not count; the rival's pending one is not its own.
    const withdrawnOn = await fx.request({ ...base, serviceId: notOffered.id });
    await fx.offer({ serviceRequestId: withdrawnOn.id, prestataireId: me.user.id, status: 'withdrawn' });
    await fx.offer({ serviceRequestId: near.id, prestataireId: rival.user.id });
    await t.database.db.insert(notifications).values([
      { userId: me.user.id, type: 'test', title: 'Nouvelle demande', body: 'Une demande' },
      { userId: me.user.id, type: 'test', title: 'Lue', body: 'Déjà lue', readAt: new Date() },
    ]);

    const res = await get('/home', me.token);
    expect(res.statusCode, res.body).toBe(200);
    const home = (res.json() as { data: Home }).data;
    expect(home.new_requests.map((r) => r.id)).toEqual([direct.id, near.id, quoted.id, edge.id]);
    expect(home.new_requests[0]).toMatchObject({ direct: true });
    expect(home.new_requests[1]!.distance_km).toBeGreaterThan(4);
    expect(home.new_requests[1]!.distance_km).toBeLessThan(6);
    expect(home.new_requests[3]!.distance_km).toBeCloseTo(28.9, 0);
    expect(home.pending_offers.map((o) => [o.id, o.service_request.id])).toEqual([[myOffer.id, answered.id]]);
    expect(home.counts).toEqual({ new_requests: 4, pending_offers: 1, today_appointments: 0, unread_notifications: 1 });
    expect(home.timezone).toBe('Europe/Paris');

    // The rival offers no service: only the direct request to it would reach it.
    const rivalHome = (await get('/home', rival.token)).json() as { data: Home };
    expect(rivalHome.data.new_requests.map((r) => r.direct)).toEqual([true]);
    // A prestataire not validated receives nothing.
    const pending = await workshop({ validated: false });
    await fx.offerService(pending.user.id, offered.id);
    expect(((await get('/home', pending.token)).json() as { data: Home }).data.counts.new_requests).toBe(0);
  });

  it('lists at most ten new requests, newest first, and counts them all', async () => {
    const category = await fx.category();
    const offered = await fx.service(category.id);
    const me = await workshop();
    await fx.offerService(me.user.id, offered.id);
    const client = await createClient(t);
    const car = await fx.vehicle(client.user.id);
    const made = [];
    for (let i = 0; i < 12; i++) {
      made.push(await fx.request({ clientId: client.user.id, vehicleId: car.id, serviceId: offered.id, createdAt: new Date(Date.now() - (12 - i) * 60_000) }));
    }
    const home = ((await get('/home', me.token)).json() as { data: Home }).data;
    expect(home.new_requests.map((r) => r.id)).toEqual(made.slice(2).reverse().map((r) => r.id));
    expect(home.counts.new_requests).toBe(12);
  });

  it("counts today's appointments in the prestataire's time zone, not in UTC", async () => {
    const category = await fx.category();
    const service = await fx.service(category.id);
    // Auckland is 13 hours ahead of UTC in November: at 20:00 UTC on the 25th it is 09:00 on the 26th.
    const me = await workshop({ timezone: 'Pacific/Auckland' });
    const book = await booking(service.id);
    const lateOn25th = await book.at(me.user.id, new Date('2026-11-25T10:00:00Z')); // 23:00 on the 25th in Auckland
    const early26th = await book.at(me.user.id, new Date('2026-11-25T12:00:00Z')); // 01:00 on the 26th
    const evening26th = await book.at(me.user.id, new Date('2026-11-26T09:00:00Z')); // 22:00 on the 26th
    await book.at(me.user.id, new Date('2026-11-26T11:00:00Z')); // 00:00 on the 27th
    await book.at(me.user.id, new Date('2026-11-25T14:00:00Z'), { status: 'cancelled' });

    const service26th = createPrestataireHomeService({ db: t.database.db, now: () => new Date('2026-11-25T20:00:00Z') });
    const home = await service26th.home(actorOf(me));
    expect(home.today).toBe('2026-11-26');
    expect(home.todays.map((r) => r.appointment.id)).toEqual([early26th.id, evening26th.id]);
    // The same instant in UTC is still the 25th, which would have held the 23:00 one.
    expect(home.todays.map((r) => r.appointment.id)).not.toContain(lateOn25th.id);

    // Its agenda's default range starts on its own today too.
    const agenda = await service26th.agenda(actorOf(me), { include_cancelled: false });
    expect({ from: agenda.from, to: agenda.to }).toEqual({ from: '2026-11-26', to: '2026-12-03' });
  });

  it('is for prestataires only', async () => {
    const client = await createClient(t);
    const admin = await createAdmin(t);
    expectError(await t.app.inject({ method: 'GET', url: '/api/v1/prestataire/home' }), 401, 'unauthenticated');
    expectError(await get('/home', client.token), 403, 'forbidden');
    expectError(await get('/home', admin.token), 403, 'forbidden');
  });
});

describe('GET /prestataire/agenda', () => {
  it("lists its appointments of the local days asked, by start, with the client's first name, the vehicle and the service", async () => {
    const category = await fx.category();
    const service = await fx.service(category.id, { name: 'Révision' });
    const me = await workshop({ timezone: 'Pacific/Auckland' });
    const other = await workshop();
    const book = await booking(service.id);
    const second = await book.at(me.user.id, new Date('2026-11-26T09:00:00Z')); // 22:00 on the 26th in Auckland
    const first = await book.at(me.user.id, new Date('2026-11-25T12:00:00Z')); // 01:00 on the 26th
    const cancelled = await book.at(me.user.id, new Date('2026-11-25T20:00:00Z'), { status: 'cancelled' });
    const done = await book.at(me.user.id, new Date('2026-11-25T22:00:00Z'), { status: 'completed' });
    await book.at(me.user.id, new Date('2026-11-25T10:00:00Z')); // 23:00 on the 25th
    await book.at(me.user.id, new Date('2026-11-26T11:00:00Z')); // 00:00 on the 27th
    await book.at(other.user.id, new Date('2026-11-25T18:00:00Z'));

    const res = await get('/agenda?from=2026-11-26&to=2026-11-26', me.token);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json() as { data: AgendaItem[]; meta: unknown };
    expect(body.meta).toEqual({ timezone: 'Pacific/Auckland', from: '2026-11-26', to: '2026-11-26' });
    expect(body.data.map((a) => a.id)).toEqual([first.id, done.id, second.id]);
    expect(body.data[0]).toMatchObject({
      status: 'scheduled',
      starts_at: '2026-11-25T12:00:00.000Z',
      client: { id: book.client.user.id, first_name: 'Léa' },
      vehicle: { make: 'Citroën', model: 'C3', plate: 'GH-456-IJ' },
      service: { id: service.id, name: 'Révision' },
    });
    const withCancelled = (await get('/agenda?from=2026-11-26&to=2026-11-26&include_cancelled=true', me.token)).json() as { data: AgendaItem[] };
    expect(withCancelled.data.map((a) => a.id)).toEqual([first.id, cancelled.id, done.id, second.id]);

    // Another prestataire sees only its own.
    const theirs = (await get('/agenda?from=2026-11-25&to=2026-11-27', other.token)).json() as { data: AgendaItem[] };
    expect(theirs.data).toHaveLength(1);
  });

  it('defaults to today and the seven days after, in its time zone', async () => {
    const me = await workshop({ timezone: 'America/Los_Angeles' });
    const res = await get('/agenda', me.token);
    expect(res.statusCode).toBe(200);
    const today = todayIn('America/Los_Angeles');
    expect((res.json() as { meta: unknown }).meta).toEqual({ timezone: 'America/Los_Angeles', from: today, to: addDays(today, 7) });
    const fromOnly = (await get('/agenda?from=2026-03-01', me.token)).json() as { meta: { to: string } };
    expect(fromOnly.meta.to).toBe('2026-03-08');
  });

  it('validates the range: dates, order, at most 62 days', async () => {
    const me = await workshop();
    expect((await get('/agenda?from=2026-01-01&to=2026-03-03', me.token)).statusCode).toBe(200); // 62 days
    const tooLong = expectError(await get('/agenda?from=2026-01-01&to=2026-03-04', me.token), 422, 'validation_error');
    expect(Object.keys(tooLong.errors!)).toEqual(['to']);
    const reversed = expectError(await get('/agenda?from=2026-01-10&to=2026-01-09', me.token), 422, 'validation_error');
    expect(Object.keys(reversed.errors!)).toEqual(['to']);
    expectError(await get('/agenda?from=2026-02-30', me.token), 422, 'validation_error');
    expectError(await get('/agenda?from=tomorrow', me.token), 422, 'validation_error');
    expectError(await get('/agenda?include_cancelled=yes', me.token), 422, 'validation_error');
  });

  it('is for prestataires only', async () => {
    const client = await createClient(t);
    expectError(await t.app.inject({ method: 'GET', url: '/api/v1/prestataire/agenda' }), 401, 'unauthenticated');
    expectError(await get('/agenda', client.token), 403, 'forbidden');
  });
});
