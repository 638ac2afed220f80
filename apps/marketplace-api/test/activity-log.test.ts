import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, users } from '../src/db/schema/index.js';
import { bearer, buildTestApp, createAdmin, createClient, createPrestataire, expectError, type TestApp, type TestUser } from './helpers.js';

let t: TestApp;
let admin: TestUser;
let client: TestUser;
let prestataire: TestUser;
let suspendedAdminToken: string;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '100000' });
  admin = await createAdmin(t);
  client = await createClient(t);
  prestataire = await createPrestataire(t);
  const suspended = await createAdmin(t);
  suspendedAdminToken = suspended.token;
  await t.database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, suspended.user.id));
});
afterAll(() => t.close());

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

function call(method: Method, url: string, token?: string, payload?: unknown, headers: Record<string, string> = {}) {
  return t.app.inject({
    method,
    url: `/api/v1${url}`,
    headers: { ...(token ? bearer(token) : {}), ...headers },
    payload: payload as object | undefined,
  });
}

interface Entry {
  id: number;
  actor: { id: number; name: string; role: string | null } | null;
  action: string;
  subject_type: string;
  subject_id: number | null;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  ip: string | null;
  request_id: string | null;
  created_at: string;
}

async function list(query: string, token = admin.token) {
  const res = await call('GET', `/admin/activity-log?${query}`, token);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { data: Entry[]; meta: { current_page: number; per_page: number; total: number; last_page: number } };
}

describe('GET /admin/activity-log', () => {
  it('lists what administrators did, newest first, with actor, subject, before/after, ip and request id', async () => {
    const target = await createClient(t);
    const suspend = await call('PUT', `/admin/users/${target.user.id}/status`, admin.token, { status: 'suspended', reason: 'Fraud' }, { 'x-request-id': 'audit-suspend-1' });
    expect(suspend.statusCode, suspend.body).toBe(200);
    const rename = await call('PUT', `/admin/users/${target.user.id}`, admin.token, { last_name: 'Renamed' });
    expect(rename.statusCode, rename.body).toBe(200);

    const { data, meta } = await list(`subject_type=user&subject_id=${target.user.id}`);
    expect(meta).toEqual({ current_page: 1, per_page: 50, total: 3, last_page: 1 });
    expect(data.map((e) => e.action)).toEqual(['user.updated', 'user.status_changed', 'user.created']);
    expect(data[1]).toEqual({
      id: expect.any(Number),
      actor: { id: admin.user.id, name: `${admin.user.firstName} ${admin.user.lastName}`, role: 'admin' },
      action: 'user.status_changed',
      subject_type: 'user',
      subject_id: target.user.id,
      before: { status: 'active', reason: null },
      after: { status: 'suspended', reason: 'Fraud' },
      ip: '127.0.0.1',
      request_id: 'audit-suspend-1',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    expect(data[0]!.request_id).toBe(rename.headers['x-request-id']);
    expect(data[0]).toMatchObject({ before: { last_name: target.user.lastName }, after: { last_name: 'Renamed' } });
    // Work done by the platform itself has no actor.
    expect(data[2]).toMatchObject({ actor: null, action: 'user.created', ip: null });
  });

  it('filters by actor, exact action or action prefix, and pages', async () => {
    const actor = await createAdmin(t);
    const a = await createClient(t);
    const b = await createClient(t);
    await call('POST', `/admin/users/${a.user.id}/send-warning`, actor.token, { subject: 'First', message: 'First warning' });
    await call('PUT', `/admin/users/${b.user.id}/status`, actor.token, { status: 'banned', reason: 'Spam' });
    await call('POST', `/admin/users/${b.user.id}/send-warning`, actor.token, { subject: 'Second', message: 'Second warning' });

    const all = await list(`actor_id=${actor.user.id}`);
    expect(all.data.map((e) => [e.action, e.subject_id])).toEqual([
      ['user.warned', b.user.id],
      ['user.status_changed', b.user.id],
      ['user.warned', a.user.id],
    ]);
    expect(all.data.every((e) => e.actor?.id === actor.user.id)).toBe(true);

    const warned = await list(`actor_id=${actor.user.id}&action=user.warned`);
    expect(warned.data.map((e) => e.subject_id)).toEqual([b.user.id, a.user.id]);
    expect((await list(`actor_id=${actor.user.id}&action=user.`)).meta.total).toBe(3);
    expect((await list(`actor_id=${actor.user.id}&action=user`)).meta.total).toBe(0);
    expect((await list(`actor_id=${actor.user.id}&action=admin.`)).meta.total).toBe(0);

    const page2 = await list(`actor_id=${actor.user.id}&per_page=2&page=2`);
    expect(page2.meta).toEqual({ current_page: 2, per_page: 2, total: 3, last_page: 2 });
    expect(page2.data.map((e) => e.subject_id)).toEqual([a.user.id]);
  });

  it('filters by time range, dates covering whole days', async () => {
    const actor = await createAdmin(t);
    const target = await createClient(t);
    await call('POST', `/admin/users/${target.user.id}/send-warning`, actor.token, { subject: 'Old', message: 'Old warning' });
    await call('POST', `/admin/users/${target.user.id}/send-warning`, actor.token, { subject: 'New', message: 'New warning' });
    const [older] = (await list(`actor_id=${actor.user.id}`)).data.slice(-1);
    await t.database.db.update(activityLog).set({ createdAt: new Date('2025-06-15T22:00:00Z') }).where(eq(activityLog.id, older!.id));

    const ids = async (query: string) => (await list(`actor_id=${actor.user.id}&${query}`)).data.map((e) => e.id);
    expect(await ids('from=2025-06-15&to=2025-06-15')).toEqual([older!.id]);
    expect(await ids('to=2025-06-15T21:59:59Z')).toEqual([]);
    expect(await ids('from=2025-06-15T22:00:00.000Z&to=2025-06-15T22:00:00Z')).toEqual([older!.id]);
    expect(await ids('from=2025-06-16')).toHaveLength(1);
    expect(await ids('from=2025-06-16')).not.toContain(older!.id);
    expect(await ids('from=2025-06-16T00:00:00%2B02:00&to=2025-06-16')).toEqual([older!.id]);
  });

  it('answers 422 for bad filters and pagination', async () => {
    for (const query of [
      'per_page=101',
      'page=0',
      'actor_id=abc',
      'actor_id=0',
      'subject_id=-1',
      'subject_type=User%20Table',
      'action=user%25',
      'from=not-a-date',
      'from=2026-13-01',
      'to=2026-01-01T10:00:00',
      'from=2101-01-01',
      'from=2026-02-02&to=2026-02-01',
    ]) {
      const body = expectError(await call('GET', `/admin/activity-log?${query}`, admin.token), 422, 'validation_error');
      expect(Object.keys(body.errors ?? {}).length, query).toBeGreaterThan(0);
    }
  });

  it('is for administrators only', async () => {
    expectError(await call('GET', '/admin/activity-log'), 401, 'unauthenticated');
    expectError(await call('GET', '/admin/activity-log', client.token), 403, 'forbidden');
    expectError(await call('GET', '/admin/activity-log', prestataire.token), 403, 'forbidden');
    expectError(await call('GET', '/admin/activity-log', suspendedAdminToken), 401, 'unauthenticated');
  });
});
