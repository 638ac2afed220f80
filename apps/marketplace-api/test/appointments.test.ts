import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { absences, activityLog, appointments, serviceRequests, users } from '../src/db/schema/index.js';
import type { Actor } from '../src/lib/context.js';
import { startOfDayIn, todayIn } from '../src/lib/time.js';
import { createActivityRecorder } from '../src/modules/activity-log/activity-log.recorder.js';
import { createAppointmentsService } from '../src/modules/booking/appointments/appointments.service.js';
import type { AvailabilityService } from '../src/modules/booking/slots/slots.service.js';
import { createOutbox } from '../src/modules/outbox/outbox.js';
import { eventsOf } from '../src/modules/outbox/outbox.repository.js';
import { createSettingsService } from '../src/modules/settings/settings.service.js';
import { aBooking, anOpenPrestataire, DAY, HOUR, type Booking } from './appointment-fixtures.js';
import { lifecycleFixtures } from './lifecycle-fixtures.js';
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

interface AppointmentBody {
  id: number;
  status: string;
  starts_at: string;
  ends_at: string;
  price_cents: number;
  price_adjustment: { amount_cents: number; reason: string; status: string; requested_at: string } | null;
  client: { id: number; first_name: string; last_name: string };
  prestataire: { id: number; business_name: string | null; timezone: string };
  vehicle: { id: number; make: string };
  service: { id: number; name: string };
  cancelled_by: string | null;
  cancel_reason: string | null;
  cancellation_fee_cents: number | null;
  started_at: string | null;
  ended_at: string | null;
  completed_at: string | null;
}

let t: TestApp;
let admin: TestUser;
let adminActor: Actor;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '100000' });
  admin = await createAdmin(t);
  adminActor = { kind: 'user', userId: admin.user.id, role: 'admin', sessionId: 's', requestId: 'req-appointments', ip: '192.0.2.1' };
});
afterAll(() => t.close());

type Method = 'GET' | 'POST' | 'PUT';
function call(method: Method, url: string, token?: string, payload?: object) {
  return t.app.inject({ method, url: `/api/v1${url}`, headers: token ? bearer(token) : {}, payload });
}
const act = (b: Booking, verb: string, token: string | undefined, payload?: object) => call('POST', `/appointments/${b.appointment.id}/${verb}`, token, payload);
const body = (res: { json(): unknown }) => (res.json() as { data: AppointmentBody }).data;

async function appointmentRow(id: number) {
  const [row] = await t.database.db.select().from(appointments).where(eq(appointments.id, id));
  return row!;
}

async function requestStatus(id: number) {
  const [row] = await t.database.db.select({ status: serviceRequests.status }).from(serviceRequests).where(eq(serviceRequests.id, id));
  return row?.status;
}

/** Today, 01:00 in Paris: an appointment whose local day is today (it may be past; start does not mind). */
function todayInParis(): Date {
  return new Date(startOfDayIn('Europe/Paris', todayIn('Europe/Paris')).getTime() + HOUR);
}

async function setSettings(patch: Record<string, number>) {
  const db = t.database.db;
  await createSettingsService({ db, recorder: createActivityRecorder({ db }) }).update(adminActor, patch);
}

/** The service over the test database with its own clock and slot checker (for what the routes cannot pin). */
function serviceAt(now: Date, availability: Pick<AvailabilityService, 'checkSlot'> = { checkSlot: async () => 'free' }) {
  const db = t.database.db;
  const recorder = createActivityRecorder({ db });
  return createAppointmentsService({ db, recorder, outbox: createOutbox({ db }), settings: createSettingsService({ db, recorder }), availability, now: () => now });
}

function actorOf(user: TestUser): Actor {
  return { kind: 'user', userId: user.user.id, role: user.user.role, sessionId: 's', requestId: 'req-test', ip: '192.0.2.2' };
}

describe('reading appointments', () => {
  it("lists the caller's own, latest start first, with the other party, the vehicle, the service and no adjustment", async () => {
    const client = await createClient(t);
    const prestataire = await anOpenPrestataire(t);
    const early = await aBooking(t, { client, prestataire, startsAt: new Date(Date.now() + 3 * DAY) });
    const late = await aBooking(t, { client, prestataire, startsAt: new Date(Date.now() + 5 * DAY) });
    await aBooking(t); // someone else's

    for (const who of [client, prestataire]) {
      const res = await call('GET', '/appointments', who.token);
      expect(res.statusCode, res.body).toBe(200);
      const json = res.json() as { data: AppointmentBody[]; meta: { total: number } };
      expect(json.data.map((a) => a.id)).toEqual([late.appointment.id, early.appointment.id]);
      expect(json.meta.total).toBe(2);
    }
    const [first] = (((await call('GET', '/appointments', client.token)).json()) as { data: AppointmentBody[] }).data;
    expect(first).toMatchObject({
      status: 'scheduled',
      price_cents: 12_000,
      price_adjustment: null,
      client: { id: client.user.id, first_name: client.user.firstName },
      prestataire: { id: prestataire.user.id, business_name: prestataire.profile!.businessName, timezone: 'Europe/Paris' },
      vehicle: { make: 'Renault' },
      service: { name: 'Oil change' },
      cancellation_fee_cents: null,
    });
  });

  it('filters by status and by a window of starts, and pages', async () => {
    const client = await createClient(t);
    const prestataire = await anOpenPrestataire(t);
    const a = await aBooking(t, { client, prestataire, startsAt: new Date(Date.now() + 3 * DAY) });
    const b = await aBooking(t, { client, prestataire, startsAt: new Date(Date.now() + 6 * DAY), status: 'in_progress' });
    const ids = async (query: string) =>
      (((await call('GET', `/appointments?${query}`, client.token)).json()) as { data: AppointmentBody[] }).data.map((x) => x.id);
    expect(await ids('status=in_progress')).toEqual([b.appointment.id]);
    const from = encodeURIComponent(new Date(Date.now() + 2 * DAY).toISOString());
    const to = encodeURIComponent(new Date(Date.now() + 4 * DAY).toISOString());
    expect(await ids(`from=${from}&to=${to}`)).toEqual([a.appointment.id]);
    const page = (await call('GET', '/appointments?per_page=1&page=2', client.token)).json() as { data: AppointmentBody[]; meta: object };
    expect(page.data.map((x) => x.id)).toEqual([a.appointment.id]);
    expect(page.meta).toEqual({ current_page: 2, per_page: 1, total: 2, last_page: 2 });
  });

  it('refuses bad filters (422), anonymous callers (401) and administrators (403) on the list', async () => {
    const client = await createClient(t);
    expectError(await call('GET', '/appointments?status=done', client.token), 422, 'validation_error');
    expectError(await call('GET', '/appointments?per_page=101', client.token), 422, 'validation_error');
    const reversed = expectError(await call('GET', `/appointments?from=2026-05-02T00:00:00Z&to=2026-05-01T00:00:00Z`, client.token), 422, 'validation_error');
    expect(reversed.errors).toHaveProperty('to');
    expectError(await call('GET', '/appointments'), 401, 'unauthenticated');
    expectError(await call('GET', '/appointments', admin.token), 403, 'forbidden');
  });

  it('shows an appointment to its two parties and to an administrator, 404 to anyone else', async () => {
    const b = await aBooking(t);
    for (const token of [b.client.token, b.prestataire.token, admin.token]) {
      const res = await call('GET', `/appointments/${b.appointment.id}`, token);
      expect(res.statusCode, res.body).toBe(200);
      expect(body(res).id).toBe(b.appointment.id);
    }
    expectError(await call('GET', `/appointments/${b.appointment.id}`, (await createClient(t)).token), 404, 'not_found');
    expectError(await call('GET', `/appointments/${b.appointment.id}`, (await anOpenPrestataire(t)).token), 404, 'not_found');
    expectError(await call('GET', `/appointments/999999`, b.client.token), 404, 'not_found');
    expectError(await call('GET', `/appointments/${b.appointment.id}`), 401, 'unauthenticated');
    expectError(await call('GET', `/appointments/abc`, b.client.token), 422, 'validation_error');
  });
});

describe('rescheduling', () => {
  it('moves a scheduled appointment to a free start, keeping its duration (either party), logged and published', async () => {
    const b = await aBooking(t, { durationMinutes: 90 });
    const target = new Date(b.appointment.startsAt.getTime() + DAY + 2 * HOUR);
    const res = await call('PUT', `/appointments/${b.appointment.id}/reschedule`, b.client.token, { starts_at: target.toISOString() });
    expect(res.statusCode, res.body).toBe(200);
    expect(body(res)).toMatchObject({ status: 'scheduled', starts_at: target.toISOString(), ends_at: new Date(target.getTime() + 90 * 60_000).toISOString() });

    const again = new Date(target.getTime() + HOUR);
    const byPrestataire = await call('PUT', `/appointments/${b.appointment.id}/reschedule`, b.prestataire.token, { starts_at: again.toISOString() });
    expect(body(byPrestataire).starts_at).toBe(again.toISOString());

    const events = (await eventsOf(t.database.db, 'appointment', b.appointment.id)).filter((e) => e.type === 'appointment.rescheduled');
    expect(events).toHaveLength(2);
    const [entry] = await t.database.db
      .select()
      .from(activityLog)
      .where(and(eq(activityLog.subjectId, b.appointment.id), eq(activityLog.action, 'appointment.rescheduled'), eq(activityLog.actorId, b.client.user.id)));
    expect(entry).toMatchObject({ subjectType: 'appointment', before: { starts_at: b.appointment.startsAt.toISOString() } });
  });

  it('answers 422 on starts_at for a start less than an hour away or outside the free hours', async () => {
    const b = await aBooking(t);
    const soon = await call('PUT', `/appointments/${b.appointment.id}/reschedule`, b.client.token, { starts_at: new Date(Date.now() + 10 * 60_000).toISOString() });
    expect(expectError(soon, 422, 'validation_error').errors).toHaveProperty('starts_at');

    const away = new Date(b.appointment.startsAt.getTime() + 3 * DAY);
    await t.database.db.insert(absences).values({ prestataireId: b.prestataire.user.id, startsAt: new Date(away.getTime() - HOUR), endsAt: new Date(away.getTime() + 4 * HOUR) });
    const absent = await call('PUT', `/appointments/${b.appointment.id}/reschedule`, b.client.token, { starts_at: away.toISOString() });
    expect(expectError(absent, 422, 'validation_error').errors).toHaveProperty('starts_at');

    expect(expectError(await call('PUT', `/appointments/${b.appointment.id}/reschedule`, b.client.token, {}), 422, 'validation_error').errors).toHaveProperty('starts_at');
    expectError(await call('PUT', `/appointments/${b.appointment.id}/reschedule`, b.client.token, { starts_at: 'tomorrow' }), 422, 'validation_error');
    expect((await appointmentRow(b.appointment.id)).startsAt).toEqual(b.appointment.startsAt);
  });

  it("answers 409 over another active appointment of the prestataire, and 409 with current_status once it is no longer scheduled", async () => {
    const prestataire = await anOpenPrestataire(t);
    const b = await aBooking(t, { prestataire });
    const other = await aBooking(t, { prestataire, startsAt: new Date(b.appointment.startsAt.getTime() + DAY) });
    const overlapping = new Date(other.appointment.startsAt.getTime() + 30 * 60_000);
    expectError(await call('PUT', `/appointments/${b.appointment.id}/reschedule`, b.client.token, { starts_at: overlapping.toISOString() }), 409, 'conflict');

    const started = await aBooking(t, { status: 'in_progress' });
    const res = await call('PUT', `/appointments/${started.appointment.id}/reschedule`, started.client.token, {
      starts_at: new Date(Date.now() + 4 * DAY).toISOString(),
    });
    expect(expectError(res, 409, 'conflict').current_status).toBe('in_progress');
  });

  it('answers 409 when the exclusion constraint refuses the time (a booking that raced the check)', async () => {
    const prestataire = await anOpenPrestataire(t);
    const b = await aBooking(t, { prestataire });
    const other = await aBooking(t, { prestataire, startsAt: new Date(b.appointment.startsAt.getTime() + DAY) });
    // A checker that saw the slot free: the database alone stands in the way.
    const error = await serviceAt(new Date())
      .reschedule(actorOf(b.client), b.appointment.id, other.appointment.startsAt)
      .then(
        () => null,
        (e: unknown) => e as { code?: string; status?: number },
      );
    expect(error).toMatchObject({ code: 'conflict' });
    expect((await appointmentRow(b.appointment.id)).startsAt).toEqual(b.appointment.startsAt);
  });

  it('is refused to strangers (404), administrators (403) and anonymous callers (401)', async () => {
    const b = await aBooking(t);
    const payload = { starts_at: new Date(b.appointment.startsAt.getTime() + DAY).toISOString() };
    expectError(await call('PUT', `/appointments/${b.appointment.id}/reschedule`, (await createClient(t)).token, payload), 404, 'not_found');
    expectError(await call('PUT', `/appointments/${b.appointment.id}/reschedule`, admin.token, payload), 403, 'forbidden');
    expectError(await call('PUT', `/appointments/${b.appointment.id}/reschedule`, undefined, payload), 401, 'unauthenticated');
  });
});

describe('cancelling', () => {
  it('requires a reason from every party (422)', async () => {
    const b = await aBooking(t);
    for (const token of [b.client.token, b.prestataire.token]) {
      expect(expectError(await act(b, 'cancel', token, {}), 422, 'validation_error').errors).toHaveProperty('reason');
      expectError(await act(b, 'cancel', token, { reason: '  ' }), 422, 'validation_error');
    }
    expect(expectError(await call('POST', `/admin/appointments/${b.appointment.id}/cancel`, admin.token, {}), 422, 'validation_error').errors).toHaveProperty('reason');
    expect((await appointmentRow(b.appointment.id)).status).toBe('scheduled');
  });

  it("charges a client's late cancellation the settings' percentage, and nothing when on time or cancelled by the prestataire", async () => {
    await setSettings({ cancellation_window_hours: 24, late_cancellation_fee_percent: 25 });
    try {
      const late = await aBooking(t, { startsAt: new Date(Date.now() + 5 * HOUR), priceCents: 10_001 });
      const res = await act(late, 'cancel', late.client.token, { reason: 'The car is fixed already' });
      expect(res.statusCode, res.body).toBe(200);
      expect(body(res)).toMatchObject({ status: 'cancelled', cancelled_by: 'client', cancel_reason: 'The car is fixed already', cancellation_fee_cents: 2500 });
      // The request stays accepted: it was booked; the appointment's cancellation tells the rest.
      expect(await requestStatus(late.request.id)).toBe('accepted');
      const [event] = (await eventsOf(t.database.db, 'appointment', late.appointment.id)).filter((e) => e.type === 'appointment.cancelled');
      expect(event?.payload).toMatchObject({ from: 'scheduled', to: 'cancelled', reason: 'The car is fixed already', late: true, cancellation_fee_cents: 2500 });

      const onTime = await aBooking(t, { startsAt: new Date(Date.now() + 3 * DAY) });
      expect(body(await act(onTime, 'cancel', onTime.client.token, { reason: 'Plans changed' }))).toMatchObject({ cancellation_fee_cents: 0, cancelled_by: 'client' });

      const byPrestataire = await aBooking(t, { startsAt: new Date(Date.now() + 2 * HOUR) });
      expect(body(await act(byPrestataire, 'cancel', byPrestataire.prestataire.token, { reason: 'Sick today' }))).toMatchObject({
        cancellation_fee_cents: 0,
        cancelled_by: 'prestataire',
      });
    } finally {
      await setSettings({ late_cancellation_fee_percent: 0 });
    }
  });

  it('cancels only from scheduled (409 with current_status), and is refused to strangers (404) and administrators on this route (403)', async () => {
    const b = await aBooking(t);
    expect((await act(b, 'cancel', b.client.token, { reason: 'First time' })).statusCode).toBe(200);
    expect(expectError(await act(b, 'cancel', b.prestataire.token, { reason: 'Second time' }), 409, 'conflict').current_status).toBe('cancelled');
    const running = await aBooking(t, { status: 'in_progress' });
    expect(expectError(await act(running, 'cancel', running.client.token, { reason: 'Too late' }), 409, 'conflict').current_status).toBe('in_progress');
    const other = await aBooking(t);
    expectError(await act(other, 'cancel', (await createPrestataire(t, { status: 'validated' })).token, { reason: 'Not mine' }), 404, 'not_found');
    expectError(await act(other, 'cancel', admin.token, { reason: 'Use the admin route' }), 403, 'forbidden');
    expectError(await act(other, 'cancel', undefined, { reason: 'Anonymous' }), 401, 'unauthenticated');
  });

  it('lets an administrator cancel any scheduled appointment, with no fee, through the back office only', async () => {
    await setSettings({ late_cancellation_fee_percent: 50 });
    try {
      const b = await aBooking(t, { startsAt: new Date(Date.now() + 2 * HOUR) });
      const res = await call('POST', `/admin/appointments/${b.appointment.id}/cancel`, admin.token, { reason: 'Fraud suspected' });
      expect(res.statusCode, res.body).toBe(200);
      expect(body(res)).toMatchObject({ status: 'cancelled', cancelled_by: 'admin', cancellation_fee_cents: 0, cancel_reason: 'Fraud suspected' });
      expect(expectError(await call('POST', `/admin/appointments/${b.appointment.id}/cancel`, admin.token, { reason: 'Again' }), 409, 'conflict').current_status).toBe('cancelled');
      expectError(await call('POST', `/admin/appointments/999999/cancel`, admin.token, { reason: 'Nothing' }), 404, 'not_found');

      const suspended = await createAdmin(t);
      await t.database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, suspended.user.id));
      const tokens: NonAdminTokens = { client: b.client.token, prestataire: b.prestataire.token, suspendedAdmin: suspended.token };
      const fresh = await aBooking(t);
      await expectAdminOnly(t, tokens, 'POST', `/admin/appointments/${fresh.appointment.id}/cancel`, { reason: 'Not yours' });
      expect((await appointmentRow(fresh.appointment.id)).status).toBe('scheduled');
    } finally {
      await setSettings({ late_cancellation_fee_percent: 0 });
    }
  });
});

describe('starting, ending, completing', () => {
  it('starts on its local day (its prestataire), ends, and completes once paid with its request (its client)', async () => {
    const b = await aBooking(t, { startsAt: todayInParis() });
    const started = await act(b, 'start', b.prestataire.token);
    expect(started.statusCode, started.body).toBe(200);
    expect(body(started)).toMatchObject({ status: 'in_progress' });
    expect(body(started).started_at).not.toBeNull();

    const ended = await act(b, 'end', b.prestataire.token);
    expect(body(ended)).toMatchObject({ status: 'ended' });

    const unpaid = expectError(await act(b, 'complete', b.client.token), 409, 'conflict');
    expect(unpaid.current_status).toBe('ended');
    expect(unpaid.message).toMatch(/not paid/);

    await t.database.db.update(appointments).set({ paidAt: new Date() }).where(eq(appointments.id, b.appointment.id));
    const completed = await act(b, 'complete', b.client.token);
    expect(completed.statusCode, completed.body).toBe(200);
    expect(body(completed).status).toBe('completed');
    expect(await requestStatus(b.request.id)).toBe('completed');
    const types = (await eventsOf(t.database.db, 'appointment', b.appointment.id)).map((e) => e.type);
    expect(types).toEqual(['appointment.started', 'appointment.ended', 'appointment.completed']);
    expect((await eventsOf(t.database.db, 'service_request', b.request.id)).map((e) => e.type)).toEqual(['service_request.completed']);
  });

  it('refuses each move from the wrong state with 409 and current_status', async () => {
    const scheduled = await aBooking(t, { startsAt: todayInParis() });
    expect(expectError(await act(scheduled, 'end', scheduled.prestataire.token), 409, 'conflict').current_status).toBe('scheduled');
    expect(expectError(await act(scheduled, 'complete', scheduled.client.token), 409, 'conflict').current_status).toBe('scheduled');
    const running = await aBooking(t, { status: 'in_progress', startsAt: todayInParis() });
    expect(expectError(await act(running, 'start', running.prestataire.token), 409, 'conflict').current_status).toBe('in_progress');
    const cancelled = await aBooking(t, { status: 'cancelled' });
    expect(expectError(await act(cancelled, 'start', cancelled.prestataire.token), 409, 'conflict').current_status).toBe('cancelled');
    const done = await aBooking(t, { status: 'completed', paidAt: new Date() });
    expect(expectError(await act(done, 'complete', done.client.token), 409, 'conflict').current_status).toBe('completed');
  });

  it('refuses to start before or after the appointment day (409)', async () => {
    const tomorrow = await aBooking(t, { startsAt: new Date(todayInParis().getTime() + 2 * DAY) });
    const res = expectError(await act(tomorrow, 'start', tomorrow.prestataire.token), 409, 'conflict');
    expect(res.current_status).toBe('scheduled');
    const yesterday = await aBooking(t, { startsAt: new Date(todayInParis().getTime() - 2 * DAY) });
    expectError(await act(yesterday, 'start', yesterday.prestataire.token), 409, 'conflict');
  });

  it("judges the day in the prestataire's time zone, not in UTC, around midnight", async () => {
    // 22:30 UTC on 15 June is 00:30 on 16 June in Paris (UTC+2 in summer).
    const startsAt = new Date('2026-06-15T22:30:00Z');
    const paris = await aBooking(t, { startsAt, timezone: 'Europe/Paris' });
    const utc = await aBooking(t, { startsAt, timezone: 'UTC' });

    const lateEvening = new Date('2026-06-15T21:50:00Z'); // 23:50 on 15 June in Paris, the same UTC day
    await expect(serviceAt(lateEvening).start(actorOf(paris.prestataire), paris.appointment.id)).rejects.toMatchObject({ code: 'conflict' });
    expect((await serviceAt(lateEvening).start(actorOf(utc.prestataire), utc.appointment.id)).appointment.status).toBe('in_progress');

    const afterMidnight = new Date('2026-06-15T22:10:00Z'); // 00:10 on 16 June in Paris
    expect((await serviceAt(afterMidnight).start(actorOf(paris.prestataire), paris.appointment.id)).appointment.status).toBe('in_progress');
    const utcNextDay = await aBooking(t, { startsAt, timezone: 'UTC' });
    await expect(serviceAt(new Date('2026-06-16T00:10:00Z')).start(actorOf(utcNextDay.prestataire), utcNextDay.appointment.id)).rejects.toMatchObject({
      code: 'conflict',
    });
  });

  it('answers 403 to the wrong party, 404 to strangers and administrators get 403, 401 without a token', async () => {
    const b = await aBooking(t, { startsAt: todayInParis() });
    expectError(await act(b, 'start', b.client.token), 403, 'forbidden');
    expectError(await act(b, 'start', (await anOpenPrestataire(t)).token), 404, 'not_found');
    expectError(await act(b, 'start', admin.token), 403, 'forbidden');
    expectError(await act(b, 'start', undefined), 401, 'unauthenticated');
    const ended = await aBooking(t, { status: 'ended', paidAt: new Date() });
    expectError(await act(ended, 'complete', ended.prestataire.token), 403, 'forbidden');
    expectError(await act(ended, 'complete', (await createClient(t)).token), 404, 'not_found');
    const running = await aBooking(t, { status: 'in_progress' });
    expectError(await act(running, 'end', running.client.token), 403, 'forbidden');
    expect((await appointmentRow(running.appointment.id)).status).toBe('in_progress');
  });
});

describe('price adjustments', () => {
  it('is requested by the prestataire and accepted by the client: the price changes', async () => {
    const b = await aBooking(t, { priceCents: 12_000 });
    const res = await act(b, 'request-price-adjustment', b.prestataire.token, { amount_cents: 15_500, reason: 'The brake discs are worn too' });
    expect(res.statusCode, res.body).toBe(200);
    expect(body(res)).toMatchObject({ status: 'scheduled', price_cents: 12_000, price_adjustment: { amount_cents: 15_500, reason: 'The brake discs are worn too', status: 'pending' } });
    expect(body(res).price_adjustment?.requested_at).toBeTruthy();

    const twice = expectError(await act(b, 'request-price-adjustment', b.prestataire.token, { amount_cents: 16_000, reason: 'And the pads' }), 409, 'conflict');
    expect(twice.current_status).toBe('scheduled');

    const accepted = await act(b, 'accept-price-adjustment', b.client.token);
    expect(body(accepted)).toMatchObject({ price_cents: 15_500, price_adjustment: { status: 'accepted', amount_cents: 15_500 } });
    expect(expectError(await act(b, 'accept-price-adjustment', b.client.token), 409, 'conflict').current_status).toBe('scheduled');
    expect((await eventsOf(t.database.db, 'appointment', b.appointment.id)).map((e) => e.type)).toEqual([
      'appointment.price_adjustment_requested',
      'appointment.price_adjustment_accepted',
    ]);
  });

  it('is rejected by the client: the price stays; a new one may then be asked for, also while in progress', async () => {
    const b = await aBooking(t, { status: 'in_progress', priceCents: 8_000 });
    await act(b, 'request-price-adjustment', b.prestataire.token, { amount_cents: 9_000, reason: 'Extra filter' });
    const rejected = await act(b, 'reject-price-adjustment', b.client.token);
    expect(rejected.statusCode, rejected.body).toBe(200);
    expect(body(rejected)).toMatchObject({ status: 'in_progress', price_cents: 8_000, price_adjustment: { status: 'rejected' } });
    expect(expectError(await act(b, 'reject-price-adjustment', b.client.token), 409, 'conflict').current_status).toBe('in_progress');
    const again = await act(b, 'request-price-adjustment', b.prestataire.token, { amount_cents: 8_500, reason: 'Just the filter' });
    expect(body(again).price_adjustment).toMatchObject({ status: 'pending', amount_cents: 8_500 });
  });

  it('ending the work rejects a pending adjustment: the price is final', async () => {
    const b = await aBooking(t, { status: 'in_progress', priceCents: 8_000 });
    await act(b, 'request-price-adjustment', b.prestataire.token, { amount_cents: 9_999, reason: 'Unexpected rust' });
    const ended = await act(b, 'end', b.prestataire.token);
    expect(body(ended)).toMatchObject({ status: 'ended', price_cents: 8_000, price_adjustment: { status: 'rejected' } });
    expect(expectError(await act(b, 'accept-price-adjustment', b.client.token), 409, 'conflict').current_status).toBe('ended');
    expect(expectError(await act(b, 'request-price-adjustment', b.prestataire.token, { amount_cents: 1, reason: 'After the end' }), 409, 'conflict').current_status).toBe('ended');
  });

  it('validates the body (422) and checks the caller (403 wrong party, 404 stranger, 401)', async () => {
    const b = await aBooking(t);
    for (const payload of [{}, { amount_cents: -1, reason: 'Negative' }, { amount_cents: 1.5, reason: 'Fraction' }, { amount_cents: 100 }]) {
      expectError(await act(b, 'request-price-adjustment', b.prestataire.token, payload), 422, 'validation_error');
    }
    const valid = { amount_cents: 14_000, reason: 'More work' };
    expectError(await act(b, 'request-price-adjustment', b.client.token, valid), 403, 'forbidden');
    expectError(await act(b, 'request-price-adjustment', (await anOpenPrestataire(t)).token, valid), 404, 'not_found');
    expectError(await act(b, 'request-price-adjustment', undefined, valid), 401, 'unauthenticated');
    await act(b, 'request-price-adjustment', b.prestataire.token, valid);
    expectError(await act(b, 'accept-price-adjustment', b.prestataire.token), 403, 'forbidden');
    expectError(await act(b, 'reject-price-adjustment', (await createClient(t)).token), 404, 'not_found');
    expect((await appointmentRow(b.appointment.id)).priceAdjustmentStatus).toBe('pending');
  });
});

describe('the journey through the routes', () => {
  const journey = lifecycleFixtures(() => t);

  it('an offer accepted through the API books an appointment both parties then see, reschedule and cancel', async () => {
    const service = await journey.service();
    const prestataire = await journey.prestataire([service.id]);
    const client = await createClient(t);
    const request = await journey.request(client, service.id);
    const offered = await journey.offer(prestataire, request.id, { proposed_start_at: journey.inDays(3), duration_minutes: 60, amount_cents: 15_000 });
    expect(offered.statusCode, offered.body).toBe(201);
    const accepted = await journey.api('POST', `/offers/${(offered.json() as { data: { id: number } }).data.id}/accept`, client.token);
    expect(accepted.statusCode, accepted.body).toBe(200);
    const { id } = (accepted.json() as { data: { appointment: { id: number } } }).data.appointment;

    const listed = (await call('GET', '/appointments', prestataire.token)).json() as { data: AppointmentBody[] };
    expect(listed.data.map((a) => a.id)).toEqual([id]);
    const shown = body(await call('GET', `/appointments/${id}`, client.token));
    expect(shown).toMatchObject({ status: 'scheduled', price_cents: 15_000, starts_at: journey.inDays(3), prestataire: { id: prestataire.user.id } });

    const moved = await call('PUT', `/appointments/${id}/reschedule`, prestataire.token, { starts_at: journey.inDays(4, 14) });
    expect(moved.statusCode, moved.body).toBe(200);
    expect(body(moved)).toMatchObject({ starts_at: journey.inDays(4, 14), ends_at: new Date(Date.parse(journey.inDays(4, 14)) + HOUR).toISOString() });

    const cancelled = await call('POST', `/appointments/${id}/cancel`, client.token, { reason: 'Sold the car' });
    expect(body(cancelled)).toMatchObject({ status: 'cancelled', cancelled_by: 'client', cancellation_fee_cents: 0 });
    // Its time is free again: the prestataire may be booked there.
    const again = await journey.offer(prestataire, (await journey.request(await createClient(t), service.id)).id, { proposed_start_at: journey.inDays(4, 14) });
    expect(again.statusCode, again.body).toBe(201);
  });
});
