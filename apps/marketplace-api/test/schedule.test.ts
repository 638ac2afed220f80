import { and, eq } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { absences, activityLog, availabilities, closures } from '../src/db/schema/index.js';
import { addDays, todayIn } from '../src/lib/time.js';
import { bearer, buildTestApp, createAdmin, createClient, createPrestataire, expectError, unique, type TestApp } from './helpers.js';

let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_PUBLIC: '100000', RATE_LIMIT_AUTHENTICATED: '100000' });
});
afterAll(() => t.close());

type Method = 'GET' | 'PUT' | 'PATCH' | 'POST' | 'DELETE';
type Json = Record<string, unknown> | undefined;
const api = (method: Method, url: string, token?: string, payload?: Json) =>
  t.app.inject({ method, url: `/api/v1${url}`, headers: token ? bearer(token) : {}, ...(payload === undefined ? {} : { payload }) });
const fieldErrors = (res: LightMyRequestResponse) => expectError(res, 422, 'validation_error').errors ?? {};
const logsOf = (action: string, userId: number) =>
  t.database.db.select().from(activityLog).where(and(eq(activityLog.action, action), eq(activityLog.subjectId, userId)));
const hours = (day: number, start: string, end: string) => ({ day_of_week: day, start_time: start, end_time: end });
const week = (res: LightMyRequestResponse) =>
  (res.json().data as { day_of_week: number; start_time: string; end_time: string }[]).map(({ day_of_week, start_time, end_time }) =>
    hours(day_of_week, start_time, end_time),
  );
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

describe('weekly hours', () => {
  it('PUT replaces the whole week, GET answers it sorted by day and time, with 24:00 kept', async () => {
    const p = await createPrestataire(t); // not validated yet: its calendar is still its own to prepare
    expect((await api('GET', '/prestataire/availabilities', p.token)).json()).toEqual({ data: [] });

    const put = await api('PUT', '/prestataire/availabilities', p.token, {
      availabilities: [hours(2, '14:00', '18:00'), hours(1, '14:00', '24:00'), hours(1, '08:00', '12:00'), hours(2, '08:00', '14:00')],
    });
    expect(put.statusCode).toBe(200);
    const expected = [hours(1, '08:00', '12:00'), hours(1, '14:00', '24:00'), hours(2, '08:00', '14:00'), hours(2, '14:00', '18:00')];
    expect(week(put)).toEqual(expected);
    expect(put.json().data.every((a: { id: unknown }) => typeof a.id === 'number')).toBe(true);
    expect(week(await api('GET', '/prestataire/availabilities', p.token))).toEqual(expected);

    const replaced = await api('PUT', '/prestataire/availabilities', p.token, { availabilities: [hours(7, '00:00', '24:00')] });
    expect(week(replaced)).toEqual([hours(7, '00:00', '24:00')]);
    const rows = await t.database.db.select().from(availabilities).where(eq(availabilities.prestataireId, p.user.id));
    expect(rows).toHaveLength(1);

    const emptied = await api('PUT', '/prestataire/availabilities', p.token, { availabilities: [] });
    expect(emptied.json().data).toEqual([]);

    const logs = await logsOf('prestataire.availabilities_updated', p.user.id);
    expect(logs).toHaveLength(3);
    expect(logs.map((l) => l.after)).toContainEqual({ availabilities: [hours(7, '00:00', '24:00')] });
    expect(logs.map((l) => l.before)).toContainEqual({ availabilities: [hours(7, '00:00', '24:00')] });
  });

  it('are what the public reads of a validated prestataire answer, 24:00 included', async () => {
    const p = await createPrestataire(t, { status: 'validated' });
    const client = await createClient(t);
    const set = [hours(1, '08:00', '12:00'), hours(5, '18:00', '24:00')];
    await api('PUT', '/prestataire/availabilities', p.token, { availabilities: set });
    const weekly = await api('GET', `/prestataires/${p.user.id}/availabilities`, client.token);
    expect(weekly.json().data).toEqual(set);
    expect((await api('GET', `/prestataires/${p.user.id}`)).json().data.opening_hours).toEqual(set);
  });

  it('refuses overlapping intervals of one day naming the item, and changes nothing', async () => {
    const p = await createPrestataire(t);
    await api('PUT', '/prestataire/availabilities', p.token, { availabilities: [hours(3, '09:00', '17:00')] });
    const res = await api('PUT', '/prestataire/availabilities', p.token, {
      availabilities: [hours(1, '08:00', '18:00'), hours(2, '11:00', '13:00'), hours(1, '11:30', '12:00'), hours(1, '13:00', '14:00'), hours(2, '13:00', '14:00')],
    });
    const errors = fieldErrors(res);
    // A long interval overlaps each of those inside it, not only the next one.
    expect(errors).toEqual({
      'availabilities.2.start_time': ['Overlaps item 0 (08:00–18:00) on the same day'],
      'availabilities.3.start_time': ['Overlaps item 0 (08:00–18:00) on the same day'],
    });
    expect(week(await api('GET', '/prestataire/availabilities', p.token))).toEqual([hours(3, '09:00', '17:00')]);
    // Touching intervals are fine.
    const touching = await api('PUT', '/prestataire/availabilities', p.token, {
      availabilities: [hours(1, '08:00', '12:00'), hours(1, '12:00', '13:00')],
    });
    expect(touching.statusCode).toBe(200);
  });

  it('refuses bad days, times and ranges', async () => {
    const p = await createPrestataire(t);
    const res = await api('PUT', '/prestataire/availabilities', p.token, {
      availabilities: [hours(0, '08:00', '12:00'), hours(8, '08:00', '12:00'), hours(1, '8:00', '12:00'), hours(1, '10:00', '24:30'), hours(2, '12:00', '12:00'), hours(3, '13:00', '09:00'), hours(4, '23:60', '24:00')],
    });
    expect(Object.keys(fieldErrors(res)).sort()).toEqual([
      'availabilities.0.day_of_week',
      'availabilities.1.day_of_week',
      'availabilities.2.start_time',
      'availabilities.3.end_time',
      'availabilities.4.end_time',
      'availabilities.5.end_time',
      'availabilities.6.start_time',
    ]);
    expect(Object.keys(fieldErrors(await api('PUT', '/prestataire/availabilities', p.token, {})))).toEqual(['availabilities']);
    expect((await api('GET', '/prestataire/availabilities', p.token)).json().data).toEqual([]);
  });
});

describe('absences', () => {
  it('creates an absence from instants with offsets, lists the current and future ones by default, deletes one', async () => {
    const p = await createPrestataire(t);
    const now = Date.now();
    const res = await api('POST', '/prestataire/absences', p.token, {
      starts_at: '2099-12-24T08:00:00+01:00',
      ends_at: '2099-12-26T18:00:00+01:00',
      reason: 'Christmas',
    });
    expect(res.statusCode).toBe(201);
    const future = res.json().data;
    expect(future).toEqual({
      id: expect.any(Number),
      starts_at: '2099-12-24T07:00:00.000Z',
      ends_at: '2099-12-26T17:00:00.000Z',
      reason: 'Christmas',
      created_at: expect.any(String),
    });
    const current = (
      await api('POST', '/prestataire/absences', p.token, {
        starts_at: new Date(now - HOUR).toISOString(),
        ends_at: new Date(now + HOUR).toISOString(),
      })
    ).json().data;
    expect(current.reason).toBeNull();
    const past = (
      await api('POST', '/prestataire/absences', p.token, {
        starts_at: new Date(now - 3 * DAY).toISOString(),
        ends_at: new Date(now - 2 * DAY).toISOString(),
      })
    ).json().data;

    const list = await api('GET', '/prestataire/absences', p.token);
    expect(list.json().data.map((a: { id: number }) => a.id)).toEqual([current.id, future.id]);
    expect(list.json().meta).toMatchObject({ total: 2, current_page: 1 });
    const window = await api(
      'GET',
      `/prestataire/absences?from=${encodeURIComponent(new Date(now - 4 * DAY).toISOString())}&to=${encodeURIComponent(new Date(now).toISOString())}`,
      p.token,
    );
    expect(window.json().data.map((a: { id: number }) => a.id)).toEqual([past.id, current.id]);

    const deleted = await api('DELETE', `/prestataire/absences/${current.id}`, p.token);
    expect(deleted.statusCode).toBe(200);
    expectError(await api('DELETE', `/prestataire/absences/${current.id}`, p.token), 404, 'not_found');
    expect((await api('GET', '/prestataire/absences', p.token)).json().data.map((a: { id: number }) => a.id)).toEqual([future.id]);

    expect(await logsOf('prestataire.absence_created', p.user.id)).toHaveLength(3);
    const [gone] = await logsOf('prestataire.absence_deleted', p.user.id);
    expect(gone!.before).toMatchObject({ absence_id: current.id });
  });

  it('refuses an end not after the start, over a year, instants without offset, and a reversed window', async () => {
    const p = await createPrestataire(t);
    const post = (body: Json) => api('POST', '/prestataire/absences', p.token, body);
    expect(fieldErrors(await post({ starts_at: '2099-01-02T10:00:00Z', ends_at: '2099-01-02T10:00:00Z' }))).toEqual({
      ends_at: ['Must be after starts_at'],
    });
    expect(Object.keys(fieldErrors(await post({ starts_at: '2099-01-02T10:00:00Z', ends_at: '2099-01-01T10:00:00Z' })))).toEqual(['ends_at']);
    expect(fieldErrors(await post({ starts_at: '2099-01-02T10:00:00Z', ends_at: '2100-01-02T10:00:01Z' }))).toEqual({
      ends_at: ['An absence lasts at most one year'],
    });
    expect((await post({ starts_at: '2099-01-02T10:00:00Z', ends_at: '2100-01-02T10:00:00Z' })).statusCode).toBe(201);
    expect(Object.keys(fieldErrors(await post({ starts_at: '2099-01-02T10:00:00', ends_at: 'tomorrow' }))).sort()).toEqual(['ends_at', 'starts_at']);
    expect(Object.keys(fieldErrors(await post({ starts_at: '2099-01-02T10:00:00Z', ends_at: '2099-01-03T10:00:00Z', reason: 'x'.repeat(501) })))).toEqual(['reason']);
    const reversed = await api('GET', '/prestataire/absences?from=2099-01-02T00:00:00Z&to=2099-01-01T00:00:00Z', p.token);
    expect(Object.keys(fieldErrors(reversed))).toEqual(['to']);
    const rows = await t.database.db.select().from(absences).where(eq(absences.prestataireId, p.user.id));
    expect(rows).toHaveLength(1);
  });
});

describe('closures', () => {
  const body = (start: string, end: string, reason?: string) => ({ start_date: start, end_date: end, ...(reason ? { reason } : {}) });

  it('creates, shows, replaces, patches and deletes a closure', async () => {
    const p = await createPrestataire(t);
    const created = await api('POST', '/prestataire/closures', p.token, body('2099-08-01', '2099-08-15', 'Summer'));
    expect(created.statusCode).toBe(201);
    const closure = created.json().data;
    expect(closure).toEqual({
      id: expect.any(Number),
      start_date: '2099-08-01',
      end_date: '2099-08-15',
      reason: 'Summer',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect((await api('GET', `/prestataire/closures/${closure.id}`, p.token)).json().data).toEqual(closure);

    const patched = await api('PATCH', `/prestataire/closures/${closure.id}`, p.token, { end_date: '2099-08-20' });
    expect(patched.statusCode).toBe(200);
    expect(patched.json().data).toMatchObject({ start_date: '2099-08-01', end_date: '2099-08-20', reason: 'Summer' });

    const put = await api('PUT', `/prestataire/closures/${closure.id}`, p.token, body('2099-08-02', '2099-08-03'));
    expect(put.json().data).toMatchObject({ start_date: '2099-08-02', end_date: '2099-08-03', reason: null });

    const [update] = (await logsOf('prestataire.closure_updated', p.user.id)).filter((l) => (l.after as { end_date: string }).end_date === '2099-08-03');
    expect(update!.before).toEqual({ closure_id: closure.id, start_date: '2099-08-01', end_date: '2099-08-20', reason: 'Summer' });
    expect(update!.after).toEqual({ closure_id: closure.id, start_date: '2099-08-02', end_date: '2099-08-03', reason: null });

    expect((await api('DELETE', `/prestataire/closures/${closure.id}`, p.token)).statusCode).toBe(200);
    expectError(await api('GET', `/prestataire/closures/${closure.id}`, p.token), 404, 'not_found');
    expect(await logsOf('prestataire.closure_deleted', p.user.id)).toHaveLength(1);
  });

  it('lists the closures not over yet by default (today in the prestataire’s zone), and others on request', async () => {
    const p = await createPrestataire(t);
    const today = todayIn(p.profile!.timezone);
    const ids: Record<string, number> = {};
    for (const [name, start, end] of [
      ['past', addDays(today, -10), addDays(today, -5)],
      ['today', addDays(today, -1), today],
      ['later', addDays(today, 30), addDays(today, 31)],
    ] as const) {
      ids[name] = (await api('POST', '/prestataire/closures', p.token, body(start, end))).json().data.id;
    }
    const list = await api('GET', '/prestataire/closures', p.token);
    expect(list.json().data.map((c: { id: number }) => c.id)).toEqual([ids.today, ids.later]);
    const all = await api('GET', `/prestataire/closures?from=${addDays(today, -30)}&to=${today}`, p.token);
    expect(all.json().data.map((c: { id: number }) => c.id)).toEqual([ids.past, ids.today]);
    expect(Object.keys(fieldErrors(await api('GET', '/prestataire/closures?from=2099-02-30', p.token)))).toEqual(['from']);
  });

  it('refuses an end before the start, more than 366 days and bad dates; a PATCH is checked merged', async () => {
    const p = await createPrestataire(t);
    const post = (b: Json) => api('POST', '/prestataire/closures', p.token, b);
    expect(fieldErrors(await post(body('2099-08-02', '2099-08-01')))).toEqual({ end_date: ['Must be on or after start_date'] });
    expect(fieldErrors(await post(body('2099-01-01', '2100-01-02')))).toEqual({ end_date: ['A closure lasts at most 366 days'] });
    expect((await post(body('2099-01-01', '2100-01-01'))).statusCode).toBe(201); // 366 days
    expect((await post(body('2099-03-01', '2099-03-01'))).statusCode).toBe(201); // one day
    expect(Object.keys(fieldErrors(await post(body('2099-02-29', '01/03/2099')))).sort()).toEqual(['end_date', 'start_date']);
    expect(Object.keys(fieldErrors(await post({ start_date: '2099-03-01' })))).toEqual(['end_date']);

    const c = (await post(body('2099-05-10', '2099-05-12', 'Works'))).json().data;
    const patch = (b: Json) => api('PATCH', `/prestataire/closures/${c.id}`, p.token, b);
    expect(fieldErrors(await patch({ start_date: '2099-05-13' }))).toEqual({ start_date: ['Must be on or before end_date'] });
    expect(fieldErrors(await patch({ end_date: '2099-05-09' }))).toEqual({ end_date: ['Must be on or after start_date'] });
    expect(fieldErrors(await patch({ end_date: '2100-05-11' }))).toEqual({ end_date: ['A closure lasts at most 366 days'] });
    expect(Object.keys(fieldErrors(await api('PUT', `/prestataire/closures/${c.id}`, p.token, { start_date: '2099-05-10' })))).toEqual(['end_date']);
    const unchanged = (await api('GET', `/prestataire/closures/${c.id}`, p.token)).json().data;
    expect(unchanged).toMatchObject({ start_date: '2099-05-10', end_date: '2099-05-12', reason: 'Works' });
    const moved = await patch({ start_date: '2099-05-11', reason: '' });
    expect(moved.json().data).toMatchObject({ start_date: '2099-05-11', end_date: '2099-05-12', reason: null });
    const rows = await t.database.db.select().from(closures).where(eq(closures.prestataireId, p.user.id));
    expect(rows).toHaveLength(3);
  });
});

describe('security', () => {
  it('answers 401 without a token and 403 to a client or an admin on every route', async () => {
    const owner = await createPrestataire(t);
    const absence = (await api('POST', '/prestataire/absences', owner.token, { starts_at: '2099-01-01T00:00:00Z', ends_at: '2099-01-02T00:00:00Z' })).json().data;
    const closure = (await api('POST', '/prestataire/closures', owner.token, { start_date: '2099-01-01', end_date: '2099-01-02' })).json().data;
    const client = await createClient(t);
    const admin = await createAdmin(t, { email: `schedule-admin-${unique()}@example.test` });
    const calls: [Method, string, Json?][] = [
      ['GET', '/prestataire/availabilities'],
      ['PUT', '/prestataire/availabilities', { availabilities: [] }],
      ['GET', '/prestataire/absences'],
      ['POST', '/prestataire/absences', { starts_at: '2099-01-01T00:00:00Z', ends_at: '2099-01-02T00:00:00Z' }],
      ['DELETE', `/prestataire/absences/${absence.id}`],
      ['GET', '/prestataire/closures'],
      ['POST', '/prestataire/closures', { start_date: '2099-01-01', end_date: '2099-01-02' }],
      ['GET', `/prestataire/closures/${closure.id}`],
      ['PUT', `/prestataire/closures/${closure.id}`, { start_date: '2099-01-01', end_date: '2099-01-03' }],
      ['PATCH', `/prestataire/closures/${closure.id}`, { reason: 'x' }],
      ['DELETE', `/prestataire/closures/${closure.id}`],
    ];
    for (const [method, url, payload] of calls) {
      expectError(await api(method, url, undefined, payload), 401, 'unauthenticated');
      expectError(await api(method, url, client.token, payload), 403, 'forbidden');
      expectError(await api(method, url, admin.token, payload), 403, 'forbidden');
    }
    expect((await api('GET', `/prestataire/closures/${closure.id}`, owner.token)).json().data).toEqual(closure);
  });

  it("answers 404 for another prestataire's absence or closure and never lists them", async () => {
    const [owner, other] = [await createPrestataire(t), await createPrestataire(t)];
    await api('PUT', '/prestataire/availabilities', owner.token, { availabilities: [hours(1, '08:00', '12:00')] });
    const absence = (await api('POST', '/prestataire/absences', owner.token, { starts_at: '2099-01-01T00:00:00Z', ends_at: '2099-01-02T00:00:00Z' })).json().data;
    const closure = (await api('POST', '/prestataire/closures', owner.token, { start_date: '2099-01-01', end_date: '2099-01-02' })).json().data;

    expectError(await api('DELETE', `/prestataire/absences/${absence.id}`, other.token), 404, 'not_found');
    expectError(await api('GET', `/prestataire/closures/${closure.id}`, other.token), 404, 'not_found');
    expectError(await api('PUT', `/prestataire/closures/${closure.id}`, other.token, { start_date: '2099-01-01', end_date: '2099-01-05' }), 404, 'not_found');
    expectError(await api('PATCH', `/prestataire/closures/${closure.id}`, other.token, { reason: 'mine now' }), 404, 'not_found');
    expectError(await api('DELETE', `/prestataire/closures/${closure.id}`, other.token), 404, 'not_found');
    expect((await api('GET', '/prestataire/absences', other.token)).json().data).toEqual([]);
    expect((await api('GET', '/prestataire/closures', other.token)).json().data).toEqual([]);
    expect((await api('GET', '/prestataire/availabilities', other.token)).json().data).toEqual([]);

    // Replacing one's own week leaves another's alone.
    await api('PUT', '/prestataire/availabilities', other.token, { availabilities: [] });
    expect(week(await api('GET', '/prestataire/availabilities', owner.token))).toEqual([hours(1, '08:00', '12:00')]);
    expect((await api('GET', `/prestataire/closures/${closure.id}`, owner.token)).json().data).toEqual(closure);
    expect((await api('GET', '/prestataire/absences', owner.token)).json().data).toEqual([absence]);
  });
});
