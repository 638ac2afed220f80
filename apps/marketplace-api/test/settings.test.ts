import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, platformSettings } from '../src/db/schema/index.js';
import { systemActor } from '../src/lib/context.js';
import { createActivityRecorder } from '../src/modules/activity-log/activity-log.recorder.js';
import { createSettingsService } from '../src/modules/settings/settings.service.js';
import { nonAdminTokens } from './admin-lifecycle-fixtures.js';
import { bearer, buildTestApp, createAdmin, expectAdminOnly, expectError, type NonAdminTokens, type TestApp, type TestUser } from './helpers.js';

let t: TestApp;
let admin: TestUser;
let tokens: NonAdminTokens;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '100000' });
  admin = await createAdmin(t);
  tokens = await nonAdminTokens(t);
});
afterAll(() => t.close());

const DEFAULTS = {
  request_lifetime_days: 14,
  offer_lifetime_days: 7,
  cancellation_window_hours: 24,
  late_cancellation_fee_percent: 0,
  auto_complete_days: 3,
};

function call(method: 'GET' | 'PUT', payload?: unknown, token = admin.token) {
  return t.app.inject({ method, url: '/api/v1/admin/settings', headers: bearer(token), payload: payload as object });
}
const settingsService = () => createSettingsService({ db: t.database.db, recorder: createActivityRecorder({ db: t.database.db }) });

describe('platform settings', () => {
  // Runs first: nothing is stored yet.
  it('answers the defaults when nothing is stored', async () => {
    const res = await call('GET');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ data: DEFAULTS });
    expect(await settingsService().get()).toEqual(DEFAULTS);
  });

  it('changes the keys given, answers the whole settings and logs what changed', async () => {
    const res = await call('PUT', { request_lifetime_days: 21, cancellation_window_hours: 48 });
    expect(res.statusCode, res.body).toBe(200);
    expect((res.json() as { data: unknown }).data).toEqual({ ...DEFAULTS, request_lifetime_days: 21, cancellation_window_hours: 48 });
    expect((await call('GET')).json()).toEqual({ data: { ...DEFAULTS, request_lifetime_days: 21, cancellation_window_hours: 48 } });

    const entries = await t.database.db.select().from(activityLog).where(eq(activityLog.action, 'settings.updated'));
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      actorId: admin.user.id,
      subjectType: 'settings',
      before: { request_lifetime_days: 14, cancellation_window_hours: 24 },
      after: { request_lifetime_days: 21, cancellation_window_hours: 48 },
    });

    // The same values again change nothing and log nothing.
    expect((await call('PUT', { request_lifetime_days: 21 })).statusCode).toBe(200);
    expect(await t.database.db.select().from(activityLog).where(eq(activityLog.action, 'settings.updated'))).toHaveLength(1);
    // An empty object changes nothing either.
    expect((await call('PUT', {})).json()).toMatchObject({ data: { request_lifetime_days: 21 } });
  });

  it('refuses unknown keys and out-of-range values, naming each, and writes nothing', async () => {
    const before = await t.database.db.select().from(platformSettings);
    const res = expectError(
      await call('PUT', { offer_lifetime_days: 0, late_cancellation_fee_percent: 101, auto_complete_days: 2.5, surge_pricing: true, request_lifetime_days: 30 }),
      422,
      'validation_error',
    );
    expect(Object.keys(res.errors!).sort()).toEqual(['auto_complete_days', 'late_cancellation_fee_percent', 'offer_lifetime_days', 'surge_pricing']);
    expect(res.errors!.offer_lifetime_days).toEqual(['Must be a whole number between 1 and 60']);
    expect(res.errors!.surge_pricing).toEqual(['Unknown setting']);
    const unknownOnly = expectError(await call('PUT', { request_lifetime_days: 30, colour: 'blue' }), 422, 'validation_error');
    expect(Object.keys(unknownOnly.errors!)).toEqual(['colour']);
    expectError(await call('PUT', { cancellation_window_hours: '12' }), 422, 'validation_error');
    expectError(await call('PUT', [1, 2]), 422, 'validation_error');
    expect(await t.database.db.select().from(platformSettings)).toEqual(before);
    expect((await call('GET')).json()).toMatchObject({ data: { request_lifetime_days: 21 } });
  });

  it('is used by the service: stored values win, a stored value no longer valid falls back to its default', async () => {
    const service = settingsService();
    await service.update({ ...systemActor, kind: 'user', userId: admin.user.id, role: 'admin', sessionId: 's', ip: '127.0.0.1' }, { auto_complete_days: 5 });
    expect((await service.get()).auto_complete_days).toBe(5);
    expect((await call('GET')).json()).toMatchObject({ data: { auto_complete_days: 5 } });
    await t.database.db.update(platformSettings).set({ value: 999 }).where(eq(platformSettings.key, 'auto_complete_days'));
    expect((await service.get()).auto_complete_days).toBe(3);
    // Through a transaction the same.
    await t.database.db.transaction(async (tx) => expect((await service.get(tx)).request_lifetime_days).toBe(21));
    await expect(service.update({ ...systemActor, kind: 'user', userId: admin.user.id, role: 'admin', sessionId: 's', ip: '' }, { nope: 1 })).rejects.toMatchObject({
      statusCode: 422,
      errors: { nope: ['Unknown setting'] },
    });
  });

  it('is for administrators only', async () => {
    await expectAdminOnly(t, tokens, 'GET', '/admin/settings');
    await expectAdminOnly(t, tokens, 'PUT', '/admin/settings', { request_lifetime_days: 2 });
    expect((await call('GET')).json()).toMatchObject({ data: { request_lifetime_days: 21 } });
  });
});
