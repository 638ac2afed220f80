import { eq } from 'drizzle-orm';
import { DateTime } from 'luxon';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  absences,
  appointments,
  availabilities,
  closures,
  prestataireProfiles,
  prestataireServices,
  serviceCategories,
  serviceRequests,
  services,
  vehicles,
} from '../src/db/schema/index.js';
import { createAvailabilityService } from '../src/modules/booking/slots/slots.service.js';
import { bearer, buildTestApp, createClient, createPrestataire, expectError, unique, type TestApp, type TestUser } from './helpers.js';

let t: TestApp;
let client: TestUser;
let serviceId: number;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_PUBLIC: '100000', RATE_LIMIT_AUTHENTICATED: '100000' });
  client = await createClient(t);
  const [category] = await t.database.db.insert(serviceCategories).values({ slug: `cat-${unique()}`, name: 'Entretien' }).returning();
  const [service] = await t.database.db
    .insert(services)
    .values({ categoryId: category!.id, slug: `vidange-${unique()}`, name: 'Vidange', durationMinutes: 90 })
    .returning();
  serviceId = service!.id;
});
afterAll(async () => {
  await t.close();
});

/** A Monday at least two weeks ahead, in Paris: its slots are all in the future. */
const monday = DateTime.now().setZone('Europe/Paris').plus({ weeks: 2 }).startOf('week').toISODate()!;
const at = (date: string, time: string, zone = 'Europe/Paris') => DateTime.fromISO(`${date}T${time}`, { zone }).toJSDate();

/** A validated prestataire open Monday 08:00–12:00 and 14:00–18:00, Tuesday 09:00–24:00. */
async function openPrestataire(opts: { timezone?: string } = {}) {
  const p = await createPrestataire(t, { status: 'validated' });
  if (opts.timezone) {
    await t.database.db.update(prestataireProfiles).set({ timezone: opts.timezone }).where(eq(prestataireProfiles.userId, p.user.id));
  }
  await t.database.db.insert(availabilities).values([
    { prestataireId: p.user.id, dayOfWeek: 1, startTime: '14:00', endTime: '18:00' },
    { prestataireId: p.user.id, dayOfWeek: 1, startTime: '08:00', endTime: '12:00' },
    { prestataireId: p.user.id, dayOfWeek: 2, startTime: '09:00', endTime: '24:00' },
  ]);
  return p;
}

/** An active appointment of the prestataire (with the request and vehicle it comes from). */
async function appointment(prestataireId: number, startsAt: Date, minutes: number, status: 'scheduled' | 'cancelled' = 'scheduled') {
  const db = t.database.db;
  const [vehicle] = await db.insert(vehicles).values({ ownerId: client.user.id, make: 'Peugeot', model: '208', year: 2020 }).returning();
  const [request] = await db
    .insert(serviceRequests)
    .values({
      clientId: client.user.id,
      vehicleId: vehicle!.id,
      serviceId,
      prestataireId,
      description: 'Vidange',
      latitude: 45.75,
      longitude: 4.83,
      status: 'accepted',
      expiresAt: new Date(Date.now() + 86_400_000),
    })
    .returning();
  const [row] = await db
    .insert(appointments)
    .values({
      serviceRequestId: request!.id,
      clientId: client.user.id,
      prestataireId,
      vehicleId: vehicle!.id,
      serviceId,
      startsAt,
      endsAt: new Date(startsAt.getTime() + minutes * 60_000),
      priceCents: 8000,
      status,
    })
    .returning();
  return row!;
}

const localTimes = (slots: { starts_at: string }[], zone = 'Europe/Paris') =>
  slots.map((s) => DateTime.fromISO(s.starts_at, { zone }).toFormat('HH:mm'));

describe('GET /prestataires/{prestataire}/availability/upcoming', () => {
  it('answers the free slots of each local day on the 30-minute grid, in UTC, with the meta of the query', async () => {
    const p = await openPrestataire();
    const res = await t.app.inject({ url: `/api/v1/prestataires/${p.user.id}/availability/upcoming?from=${monday}&days=3&duration_minutes=120` });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.meta).toEqual({ timezone: 'Europe/Paris', slot_minutes: 30, duration_minutes: 120 });
    expect(body.data.map((d: { date: string }) => d.date)).toEqual([0, 1, 2].map((i) => DateTime.fromISO(monday).plus({ days: i }).toISODate()));
    expect(localTimes(body.data[0].slots)).toEqual(['08:00', '08:30', '09:00', '09:30', '10:00', '14:00', '14:30', '15:00', '15:30', '16:00']);
    expect(body.data[0].slots[0]).toEqual({
      starts_at: at(monday, '08:00').toISOString(),
      ends_at: at(monday, '10:00').toISOString(),
    });
    expect(localTimes(body.data[1].slots).at(-1)).toBe('22:00'); // 24:00 is the end of Tuesday
    expect(body.data[2].slots).toEqual([]);
  });

  it('leaves out closures, absences and active appointments, but not cancelled ones', async () => {
    const p = await openPrestataire();
    const tuesday = DateTime.fromISO(monday).plus({ days: 1 }).toISODate()!;
    await t.database.db.insert(closures).values({ prestataireId: p.user.id, startDate: tuesday, endDate: tuesday });
    await t.database.db.insert(absences).values({ prestataireId: p.user.id, startsAt: at(monday, '09:00'), endsAt: at(monday, '11:00') });
    await appointment(p.user.id, at(monday, '15:00'), 60);
    await appointment(p.user.id, at(monday, '16:30'), 60, 'cancelled');
    const res = await t.app.inject({ url: `/api/v1/prestataires/${p.user.id}/availability/upcoming?from=${monday}&days=2` });
    const body = res.json();
    expect(localTimes(body.data[0].slots)).toEqual(['08:00', '11:00', '14:00', '16:00', '16:30', '17:00']);
    expect(body.data[1].slots).toEqual([]);
  });

  it("takes the duration of the service at this prestataire (its own, else the catalogue's)", async () => {
    const p = await openPrestataire();
    const url = `/api/v1/prestataires/${p.user.id}/availability/upcoming?from=${monday}&days=1&service_id=${serviceId}`;
    expect((await t.app.inject({ url })).json().meta.duration_minutes).toBe(90);
    await t.database.db.insert(prestataireServices).values({ prestataireId: p.user.id, serviceId, durationMinutes: 180 });
    const res = await t.app.inject({ url });
    expect(res.json().meta.duration_minutes).toBe(180);
    expect(localTimes(res.json().data[0].slots)).toEqual(['08:00', '08:30', '09:00', '14:00', '14:30', '15:00']);
  });

  it('computes in the prestataire’s own time zone', async () => {
    const p = await openPrestataire({ timezone: 'America/New_York' });
    const res = await t.app.inject({ url: `/api/v1/prestataires/${p.user.id}/availability/upcoming?from=${monday}&days=1&duration_minutes=240` });
    expect(res.json().meta.timezone).toBe('America/New_York');
    expect(res.json().data[0].slots).toEqual([
      { starts_at: at(monday, '08:00', 'America/New_York').toISOString(), ends_at: at(monday, '12:00', 'America/New_York').toISOString() },
      { starts_at: at(monday, '14:00', 'America/New_York').toISOString(), ends_at: at(monday, '18:00', 'America/New_York').toISOString() },
    ]);
  });

  it('answers 422 for more than 31 days, a date that is not one, an unknown service; 404 for a prestataire not validated', async () => {
    const p = await openPrestataire();
    const base = `/api/v1/prestataires/${p.user.id}/availability/upcoming`;
    expectError(await t.app.inject({ url: `${base}?days=32` }), 422, 'validation_error');
    expectError(await t.app.inject({ url: `${base}?from=2026-02-30` }), 422, 'validation_error');
    expectError(await t.app.inject({ url: `${base}?duration_minutes=5` }), 422, 'validation_error');
    expectError(await t.app.inject({ url: `${base}?service_id=2000000000` }), 422, 'validation_error');
    const pending = await createPrestataire(t);
    expectError(await t.app.inject({ url: `/api/v1/prestataires/${pending.user.id}/availability/upcoming` }), 404, 'not_found');
    expectError(await t.app.inject({ url: `/api/v1/prestataires/${client.user.id}/availability/upcoming` }), 404, 'not_found');
  });

  it('defaults to seven days from today in the prestataire’s zone', async () => {
    const p = await openPrestataire();
    const body = (await t.app.inject({ url: `/api/v1/prestataires/${p.user.id}/availability/upcoming` })).json();
    expect(body.data).toHaveLength(7);
    expect(body.data[0].date).toBe(DateTime.now().setZone('Europe/Paris').toISODate());
    expect(body.meta.duration_minutes).toBe(60);
  });
});

describe('GET /prestataires/{prestataire}/availability and /availabilities', () => {
  it('shows the weekly hours sorted, and the closures and absences of the coming 31 days without their reasons', async () => {
    const p = await openPrestataire();
    const soon = DateTime.now().setZone('Europe/Paris').plus({ days: 3 }).toISODate()!;
    const late = DateTime.now().setZone('Europe/Paris').plus({ days: 60 }).toISODate()!;
    await t.database.db.insert(closures).values([
      { prestataireId: p.user.id, startDate: soon, endDate: soon, reason: 'Inventaire' },
      { prestataireId: p.user.id, startDate: late, endDate: late },
    ]);
    await t.database.db.insert(absences).values({ prestataireId: p.user.id, startsAt: at(soon, '10:00'), endsAt: at(soon, '12:00'), reason: 'Médecin' });
    const res = await t.app.inject({ url: `/api/v1/prestataires/${p.user.id}/availability` });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toEqual({
      timezone: 'Europe/Paris',
      weekly_hours: [
        { day_of_week: 1, start_time: '08:00', end_time: '12:00' },
        { day_of_week: 1, start_time: '14:00', end_time: '18:00' },
        { day_of_week: 2, start_time: '09:00', end_time: '24:00' },
      ],
      closures: [{ start_date: soon, end_date: soon }],
      absences: [{ starts_at: at(soon, '10:00').toISOString(), ends_at: at(soon, '12:00').toISOString() }],
    });
  });

  it('answers the weekly hours alone to a signed-in user, 401 without a token', async () => {
    const p = await openPrestataire();
    const url = `/api/v1/prestataires/${p.user.id}/availabilities`;
    expectError(await t.app.inject({ url }), 401, 'unauthenticated');
    const res = await t.app.inject({ url, headers: bearer(client.token) });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      data: [
        { day_of_week: 1, start_time: '08:00', end_time: '12:00' },
        { day_of_week: 1, start_time: '14:00', end_time: '18:00' },
        { day_of_week: 2, start_time: '09:00', end_time: '24:00' },
      ],
      meta: { timezone: 'Europe/Paris' },
    });
  });
});

describe('checkSlot', () => {
  it('judges a booking: free, past, outside the hours (closures, absences), busy but for the appointment moved', async () => {
    const p = await openPrestataire();
    const availability = createAvailabilityService({ db: t.database.db });
    const check = (from: string, to: string, ignoreAppointmentId?: number) =>
      availability.checkSlot(p.user.id, at(monday, from), at(monday, to), { ignoreAppointmentId });
    expect(await check('08:00', '09:00')).toBe('free');
    expect(await check('08:10', '09:05')).toBe('free');
    expect(await check('11:30', '12:30')).toBe('outside_hours');
    expect(await check('12:00', '14:00')).toBe('outside_hours');
    const taken = await appointment(p.user.id, at(monday, '15:00'), 60);
    expect(await check('15:30', '16:30')).toBe('busy');
    expect(await check('15:30', '16:30', taken.id)).toBe('free');
    await t.database.db.insert(absences).values({ prestataireId: p.user.id, startsAt: at(monday, '17:00'), endsAt: at(monday, '18:00') });
    expect(await check('16:30', '17:30')).toBe('outside_hours');
    const inTenMinutes = new Date(Date.now() + 10 * 60_000);
    expect(await availability.checkSlot(p.user.id, inTenMinutes, new Date(inTenMinutes.getTime() + 3_600_000))).toBe('past');
    // Tuesday 23:00 → Wednesday 01:00 leaves the hours at midnight.
    const tuesday = DateTime.fromISO(monday).plus({ days: 1 }).toISODate()!;
    const wednesday = DateTime.fromISO(monday).plus({ days: 2 }).toISODate()!;
    expect(await availability.checkSlot(p.user.id, at(tuesday, '23:00'), at(wednesday, '01:00'))).toBe('outside_hours');
    expect(await availability.checkSlot(p.user.id, at(tuesday, '22:00'), at(wednesday, '00:00'))).toBe('free');
  });

  it('the exclusion constraint refuses two overlapping active appointments of one prestataire, whatever the code checked', async () => {
    const p = await openPrestataire();
    await appointment(p.user.id, at(monday, '08:00'), 60);
    await expect(appointment(p.user.id, at(monday, '08:30'), 60)).rejects.toThrow();
    const rows = await t.database.db.select().from(appointments).where(eq(appointments.prestataireId, p.user.id));
    expect(rows).toHaveLength(1);
    // Back to back is not an overlap; a cancelled one holds nothing.
    await appointment(p.user.id, at(monday, '09:00'), 60);
    await appointment(p.user.id, at(monday, '09:30'), 60, 'cancelled');
  });
});
