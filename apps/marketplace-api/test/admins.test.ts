import { verifyPassword } from '@repo/auth';
import { and, desc, eq, isNull } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, users } from '../src/db/schema/index.js';
import { systemActor } from '../src/lib/context.js';
import { createActivityRecorder } from '../src/modules/activity-log/activity-log.recorder.js';
import { createActivityLogService } from '../src/modules/activity-log/activity-log.service.js';
import { createAdminUsersService } from '../src/modules/admin-users/admin-users.service.js';
import { createAdminsService } from '../src/modules/admin-users/admins.service.js';
import { createEmailVerificationService } from '../src/modules/email-codes/email-verification.service.js';
import {
  bearer,
  buildTestApp,
  createAdmin,
  createClient,
  createPrestataire,
  expectAdminOnly as adminOnly,
  expectError,
  unique,
  usersService,
  type TestApp,
  type TestUser,
} from './helpers.js';

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

function caller(app: () => TestApp) {
  return (method: Method, url: string, token?: string, payload?: unknown) =>
    app().app.inject({ method, url: `/api/v1${url}`, headers: token ? bearer(token) : {}, payload: payload as object | undefined });
}

const uniqueEmail = (prefix: string) => `${prefix}${unique()}-${Date.now()}@example.test`;

function adminBody(overrides: Record<string, unknown> = {}) {
  return {
    first_name: 'Alice',
    last_name: 'Admin',
    email: uniqueEmail('alice'),
    password: 'a-long-enough-secret',
    password_confirmation: 'a-long-enough-secret',
    ...overrides,
  };
}

describe('administrators', () => {
  let t: TestApp;
  let admin: TestUser;
  let client: TestUser;
  let prestataire: TestUser;
  let suspendedAdminToken: string;
  const call = caller(() => t);

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

  async function latestActivity(action: string, subjectId: number) {
    const [row] = await t.database.db
      .select()
      .from(activityLog)
      .where(and(eq(activityLog.action, action), eq(activityLog.subjectId, subjectId)))
      .orderBy(desc(activityLog.id))
      .limit(1);
    return row;
  }

  const expectAdminOnly = (method: Method, url: string, payload?: unknown) =>
    adminOnly(t, { client: client.token, prestataire: prestataire.token, suspendedAdmin: suspendedAdminToken }, method, url, payload);

  describe('GET /admin/admins', () => {
    it('lists live administrators only, newest first, paginated', async () => {
      const newer = await createAdmin(t);
      const gone = await createAdmin(t);
      expect((await call('DELETE', `/admin/admins/${gone.user.id}`, admin.token)).statusCode).toBe(200);

      const res = await call('GET', '/admin/admins?per_page=100', admin.token);
      expect(res.statusCode, res.body).toBe(200);
      const { data, meta } = res.json();
      const ids = data.map((u: { id: number }) => u.id);
      expect(ids[0]).toBe(newer.user.id);
      expect(ids).toContain(admin.user.id);
      expect(ids).not.toContain(gone.user.id);
      expect(ids).not.toContain(client.user.id);
      expect(data.every((u: { role: string }) => u.role === 'admin')).toBe(true);
      const live = await t.database.db.select().from(users).where(and(eq(users.role, 'admin'), isNull(users.deletedAt)));
      expect(meta).toEqual({ current_page: 1, per_page: 100, total: live.length, last_page: 1 });

      const page = (await call('GET', '/admin/admins?per_page=1&page=2', admin.token)).json();
      expect(page.meta).toMatchObject({ current_page: 2, per_page: 1, total: live.length, last_page: live.length });
      expect(page.data).toHaveLength(1);
    });

    it('answers 422 for per_page over 100', async () => {
      expectError(await call('GET', '/admin/admins?per_page=101', admin.token), 422, 'validation_error');
    });

    it('is for administrators only', async () => {
      await expectAdminOnly('GET', '/admin/admins');
    });
  });

  describe('POST /admin/admins', () => {
    it('creates an administrator who can use the back office, and logs it', async () => {
      const body = adminBody({ lang: 'en' });
      const res = await call('POST', '/admin/admins', admin.token, body);
      expect(res.statusCode, res.body).toBe(201);
      const data = res.json().data;
      expect(data).toMatchObject({ role: 'admin', email: body.email, has_password: true, status: 'active', lang: 'en' });
      const [row] = await t.database.db.select().from(users).where(eq(users.id, data.id));
      expect(await verifyPassword(row!.passwordHash!, body.password)).toBe(true);
      const entry = await latestActivity('admin.created', data.id);
      expect(entry).toMatchObject({ actorId: admin.user.id, actorRole: 'admin', ip: '127.0.0.1', after: expect.objectContaining({ role: 'admin', email: body.email }) });
    });

    it('answers 422 for a short password, a mismatched confirmation or missing fields', async () => {
      const short = expectError(await call('POST', '/admin/admins', admin.token, adminBody({ password: 'short', password_confirmation: 'short' })), 422, 'validation_error');
      expect(short.errors).toHaveProperty('password');
      const mismatch = expectError(await call('POST', '/admin/admins', admin.token, adminBody({ password_confirmation: 'something-else' })), 422, 'validation_error');
      expect(mismatch.errors).toHaveProperty('password_confirmation');
      const missing = expectError(await call('POST', '/admin/admins', admin.token, {}), 422, 'validation_error');
      expect(Object.keys(missing.errors!)).toEqual(expect.arrayContaining(['first_name', 'last_name', 'email', 'password', 'password_confirmation']));
    });

    it('answers 409 for an e-mail already taken', async () => {
      const body = expectError(await call('POST', '/admin/admins', admin.token, adminBody({ email: client.email })), 409, 'conflict');
      expect(body.errors).toHaveProperty('email');
    });

    it('is for administrators only', async () => {
      await expectAdminOnly('POST', '/admin/admins', adminBody());
    });
  });

  describe('DELETE /admin/admins/{user}', () => {
    it('anonymises the administrator, ends their sessions and logs it', async () => {
      const other = await createAdmin(t);
      const res = await call('DELETE', `/admin/admins/${other.user.id}`, admin.token);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ message: 'Administrator deleted' });
      expectError(await call('GET', '/admin/admins', other.token), 401, 'unauthenticated');
      const [row] = await t.database.db.select().from(users).where(eq(users.id, other.user.id));
      expect(row).toMatchObject({ email: `deleted-${other.user.id}@deleted.invalid`, deletedAt: expect.any(Date) });
      expect(await latestActivity('admin.deleted', other.user.id)).toMatchObject({ actorId: admin.user.id, before: expect.objectContaining({ email: other.email }) });
      expect(await latestActivity('user.deleted', other.user.id)).toMatchObject({ actorId: admin.user.id });
      expectError(await call('DELETE', `/admin/admins/${other.user.id}`, admin.token), 404, 'not_found');
    });

    it('answers 404 for an account that is not an administrator, 409 for oneself', async () => {
      expectError(await call('DELETE', `/admin/admins/${client.user.id}`, admin.token), 404, 'not_found');
      expectError(await call('DELETE', `/admin/admins/${prestataire.user.id}`, admin.token), 404, 'not_found');
      expectError(await call('DELETE', '/admin/admins/2000000000', admin.token), 404, 'not_found');
      expectError(await call('DELETE', '/admin/admins/x', admin.token), 422, 'validation_error');
      expectError(await call('DELETE', `/admin/admins/${admin.user.id}`, admin.token), 409, 'conflict');
      const [row] = await t.database.db.select().from(users).where(eq(users.id, client.user.id));
      expect(row!.deletedAt).toBeNull();
    });

    it('is for administrators only', async () => {
      const other = await createAdmin(t);
      await expectAdminOnly('DELETE', `/admin/admins/${other.user.id}`);
    });
  });
});

// Its own database: these tests need the platform to hold exactly two active administrators.
describe('the last active administrator', () => {
  let t: TestApp;
  const call = caller(() => t);

  beforeAll(async () => {
    t = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '100000' });
  });
  afterAll(() => t.close());

  /** Retires every administrator earlier tests left, then makes exactly two active ones. */
  async function twoAdmins() {
    await t.database.db.update(users).set({ status: 'suspended' }).where(eq(users.role, 'admin'));
    return [await createAdmin(t), await createAdmin(t)] as const;
  }

  async function activeAdmins() {
    return t.database.db
      .select({ id: users.id })
      .from(users)
      .where(and(eq(users.role, 'admin'), eq(users.status, 'active'), isNull(users.deletedAt)));
  }

  /**
   * Two administrators acted on each other at once: one won (200) and stays the one active
   * administrator; the other was refused (409, the last one cannot go) or, when the winner's change
   * committed before its request was authenticated, no longer had a session (401).
   */
  async function expectOneWinner(pair: readonly { user: { id: number } }[], results: Awaited<ReturnType<typeof call>>[]) {
    const winner = results.findIndex((r) => r.statusCode === 200);
    expect(winner, results.map((r) => r.statusCode).join(', ')).toBeGreaterThanOrEqual(0);
    const loser = results[1 - winner]!;
    if (loser.statusCode === 401) {
      expectError(loser, 401, 'unauthenticated');
    } else {
      expect(expectError(loser, 409, 'conflict').message).toBe('The last active administrator cannot be suspended, banned or deleted');
    }
    expect((await activeAdmins()).map((r) => r.id)).toEqual([pair[winner]!.user.id]);
  }

  it('survives two administrators deleting each other at the same time', async () => {
    const [a, b] = await twoAdmins();
    const results = await Promise.all([
      call('DELETE', `/admin/admins/${b.user.id}`, a.token),
      call('DELETE', `/admin/admins/${a.user.id}`, b.token),
    ]);
    await expectOneWinner([a, b], results);
  });

  it('survives two administrators deleting each other as users at the same time', async () => {
    const [a, b] = await twoAdmins();
    const results = await Promise.all([
      call('DELETE', `/admin/users/${b.user.id}`, a.token),
      call('DELETE', `/admin/users/${a.user.id}`, b.token),
    ]);
    await expectOneWinner([a, b], results);
  });

  it('survives two administrators suspending each other at the same time', async () => {
    const [a, b] = await twoAdmins();
    const results = await Promise.all([
      call('PUT', `/admin/users/${b.user.id}/status`, a.token, { status: 'suspended', reason: 'Coup' }),
      call('PUT', `/admin/users/${a.user.id}/status`, b.token, { status: 'banned', reason: 'Counter-coup' }),
    ]);
    await expectOneWinner([a, b], results);
  });

  it('keeps the last active administrator whoever acts, suspended administrators not counting', async () => {
    const [a, b] = await twoAdmins();
    expect((await call('PUT', `/admin/users/${b.user.id}/status`, a.token, { status: 'suspended', reason: 'Leave' })).statusCode).toBe(200);
    // Through HTTP the caller is always another active administrator; the platform's own jobs are not.
    const db = t.database.db;
    const recorder = createActivityRecorder({ db });
    const users = usersService(t);
    const admins = createAdminsService({ db, users, recorder });
    const adminUsers = createAdminUsersService({
      db,
      mailer: t.app.mailer,
      appUrl: t.config.appUrl,
      sessionTtlDays: 30,
      users,
      emailVerification: createEmailVerificationService({ db, mailer: t.app.mailer, appUrl: t.config.appUrl, recorder }),
      activityLog: createActivityLogService({ db }),
      recorder,
    });
    const last = 'The last active administrator cannot be suspended, banned or deleted';
    await expect(admins.remove(systemActor, a.user.id)).rejects.toMatchObject({ code: 'conflict', message: last });
    await expect(adminUsers.remove(systemActor, a.user.id)).rejects.toMatchObject({ code: 'conflict', message: last });
    await expect(adminUsers.setStatus(systemActor, a.user.id, 'banned', 'x')).rejects.toMatchObject({ code: 'conflict', message: last });
    // Deleting the suspended one is fine: an active administrator remains.
    await admins.remove(systemActor, b.user.id);
    expect(await activeAdmins()).toEqual([{ id: a.user.id }]);
  });
});
