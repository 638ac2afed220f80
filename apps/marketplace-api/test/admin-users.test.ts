import { hashToken } from '@repo/auth';
import { and, desc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, notifications, sessions, userTokens, users } from '../src/db/schema/index.js';
import { eventsOf } from '../src/modules/outbox/outbox.repository.js';
import {
  bearer,
  buildTestApp,
  createAdmin,
  createClient,
  createPrestataire,
  expectError,
  tokenFor,
  unique,
  validSiret,
  type TestApp,
  type TestUser,
  expectAdminOnly as adminOnly,
} from './helpers.js';
import { startSmtpSink } from './mail-sink.js';

let sink: Awaited<ReturnType<typeof startSmtpSink>>;
let t: TestApp;
let admin: TestUser;
let client: TestUser;
let prestataire: TestUser;
let suspendedAdminToken: string;

beforeAll(async () => {
  sink = await startSmtpSink();
  t = await buildTestApp({ SMTP_URL: sink.url, APP_URL: 'https://app.example', RATE_LIMIT_AUTHENTICATED: '100000', RATE_LIMIT_PUBLIC: '100000' });
  admin = await createAdmin(t);
  client = await createClient(t);
  prestataire = await createPrestataire(t);
  const suspended = await createAdmin(t);
  suspendedAdminToken = suspended.token;
  await t.database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, suspended.user.id));
});
afterAll(async () => {
  await t.close();
  await sink.close();
});

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

function call(method: Method, url: string, token?: string, payload?: unknown, headers: Record<string, string> = {}) {
  return t.app.inject({
    method,
    url: `/api/v1${url}`,
    headers: { ...(token ? bearer(token) : {}), ...headers },
    payload: payload as object | undefined,
  });
}

const uniqueEmail = (prefix: string) => `${prefix}${unique()}-${Date.now()}@example.test`;

/** A marker that no other test's names contain, to scope list assertions. */
const marker = () => `Mk${unique()}x${Math.random().toString(36).slice(2, 8)}`;

async function latestActivity(action: string, subjectId: number) {
  const [row] = await t.database.db
    .select()
    .from(activityLog)
    .where(and(eq(activityLog.action, action), eq(activityLog.subjectId, subjectId)))
    .orderBy(desc(activityLog.id))
    .limit(1);
  return row;
}

/** No token 401; client and prestataire 403; a suspended administrator's token 401. */
const expectAdminOnly = (method: Method, url: string, payload?: unknown) =>
  adminOnly(t, { client: client.token, prestataire: prestataire.token, suspendedAdmin: suspendedAdminToken }, method, url, payload);

describe('GET /admin/users', () => {
  it('lists accounts with their admin fields, newest first, with pagination meta', async () => {
    const m = marker();
    const first = await createClient(t, { lastName: `${m}Alpha` });
    const second = await createPrestataire(t, { lastName: `${m}Beta` });
    const res = await call('GET', `/admin/users?q=${m}`, admin.token);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.meta).toEqual({ current_page: 1, per_page: 20, total: 2, last_page: 1 });
    expect(body.data.map((u: { id: number }) => u.id)).toEqual([second.user.id, first.user.id]);
    const [p, c] = body.data;
    expect(c).toMatchObject({ id: first.user.id, role: 'client', status: 'active', last_login_at: null, deleted_at: null, prestataire: null });
    expect(c).not.toHaveProperty('password_hash');
    expect(p.prestataire).toMatchObject({ business_name: second.profile!.businessName, validation_status: 'pending' });

    const page2 = (await call('GET', `/admin/users?q=${m}&per_page=1&page=2`, admin.token)).json();
    expect(page2.meta).toEqual({ current_page: 2, per_page: 1, total: 2, last_page: 2 });
    expect(page2.data.map((u: { id: number }) => u.id)).toEqual([first.user.id]);
  });

  it('filters by role, status, e-mail verification and a case-insensitive name or e-mail search', async () => {
    const m = marker();
    const verified = await createClient(t, { lastName: `${m}Gamma` });
    const unverified = await createClient(t, { lastName: `${m}Delta`, emailVerified: false });
    const pro = await createPrestataire(t, { lastName: `${m}Epsilon` });
    await t.database.db.update(users).set({ status: 'banned' }).where(eq(users.id, pro.user.id));

    const ids = async (query: string) => {
      const res = await call('GET', `/admin/users?${query}`, admin.token);
      expect(res.statusCode, res.body).toBe(200);
      return (res.json().data as { id: number }[]).map((u) => u.id).sort((a, b) => a - b);
    };
    expect(await ids(`q=${m.toUpperCase()}&role=client`)).toEqual([verified.user.id, unverified.user.id]);
    expect(await ids(`q=${m}&role=prestataire`)).toEqual([pro.user.id]);
    expect(await ids(`q=${m}&status=banned`)).toEqual([pro.user.id]);
    expect(await ids(`q=${m}&status=active&email_verified=false`)).toEqual([unverified.user.id]);
    expect(await ids(`q=${m}&email_verified=true&role=client`)).toEqual([verified.user.id]);
    // The e-mail is searched too, and LIKE wildcards in the search are plain characters.
    expect(await ids(`q=${encodeURIComponent(verified.email.toUpperCase())}`)).toEqual([verified.user.id]);
    expect(await ids(`q=${encodeURIComponent(`${m}%`)}`)).toEqual([]);
    expect(await ids(`q=${encodeURIComponent(`${m}_amma`)}`)).toEqual([]);
  });

  it('filters by creation date (a date covers its whole day) and sorts by name or e-mail', async () => {
    const m = marker();
    const a = await createClient(t, { lastName: `${m}Bravo`, email: uniqueEmail('zulu') });
    const b = await createClient(t, { lastName: `${m}alpha`, email: uniqueEmail('alpha') });
    const c = await createClient(t, { lastName: `${m}Charlie`, email: uniqueEmail('mike') });
    await t.database.db.update(users).set({ createdAt: new Date('2021-03-10T23:30:00Z') }).where(eq(users.id, a.user.id));
    await t.database.db.update(users).set({ createdAt: new Date('2021-03-11T00:00:00Z') }).where(eq(users.id, b.user.id));

    const ids = async (query: string) => {
      const res = await call('GET', `/admin/users?q=${m}&${query}`, admin.token);
      expect(res.statusCode, res.body).toBe(200);
      return (res.json().data as { id: number }[]).map((u) => u.id);
    };
    expect(await ids('created_from=2021-03-10&created_to=2021-03-10')).toEqual([a.user.id]);
    expect(await ids('created_from=2021-03-10&created_to=2021-03-11&sort=created_at')).toEqual([a.user.id, b.user.id]);
    expect(await ids('created_from=2021-03-11T00:00:00Z&created_to=2021-03-11T00:00:00Z')).toEqual([b.user.id]);
    expect(await ids('created_from=2022-01-01')).toEqual([c.user.id]);
    expect(await ids('created_to=2021-03-10T23:29:59%2B00:00')).toEqual([]);
    expect(await ids('sort=last_name')).toEqual([b.user.id, a.user.id, c.user.id]);
    expect(await ids('sort=-last_name')).toEqual([c.user.id, a.user.id, b.user.id]);
    expect(await ids('sort=email')).toEqual([b.user.id, c.user.id, a.user.id]);
    expect(await ids('sort=-created_at')).toEqual([c.user.id, b.user.id, a.user.id]);
  });

  it('hides deleted accounts unless include_deleted=true', async () => {
    const m = marker();
    const gone = await createClient(t, { lastName: `${m}Gone` });
    expect((await call('DELETE', `/admin/users/${gone.user.id}`, admin.token)).statusCode).toBe(200);
    // The anonymised row no longer carries the name; find it by id among deleted accounts.
    const without = (await call('GET', `/admin/users?q=${m}`, admin.token)).json();
    expect(without.meta.total).toBe(0);
    const withDeleted = (await call('GET', `/admin/users?include_deleted=true&q=deleted-${gone.user.id}@`, admin.token)).json();
    expect(withDeleted.data).toEqual([expect.objectContaining({ id: gone.user.id, deleted_at: expect.any(String) })]);
  });

  it('answers 422 for out-of-range pagination, unknown filters values and bad dates', async () => {
    for (const query of [
      'per_page=101',
      'per_page=0',
      'page=0',
      'role=superuser',
      'status=frozen',
      'email_verified=yes',
      'include_deleted=1',
      'sort=password',
      'created_from=yesterday',
      'created_from=2026-02-30',
      'created_to=2026-01-01T10:00:00',
      'created_from=1900-01-01',
      'created_from=2026-02-01&created_to=2026-01-31',
    ]) {
      const body = expectError(await call('GET', `/admin/users?${query}`, admin.token), 422, 'validation_error');
      expect(Object.keys(body.errors ?? {}).length, query).toBeGreaterThan(0);
    }
  });

  it('is for administrators only', async () => {
    await expectAdminOnly('GET', '/admin/users');
  });
});

describe('POST /admin/users', () => {
  it('creates a client with a password, logged as created by the administrator', async () => {
    const email = uniqueEmail('made');
    const res = await call(
      'POST',
      '/admin/users',
      admin.token,
      { role: 'client', first_name: 'Inès', last_name: 'Roux', email: email.toUpperCase(), password: 'a-long-enough-secret', phone: '06 12 34 56 78' },
      { 'x-request-id': 'req-create-client-1' },
    );
    expect(res.statusCode, res.body).toBe(201);
    const data = res.json().data;
    expect(data).toMatchObject({ role: 'client', email, has_password: true, email_verified: false, phone: '+33612345678', lang: 'fr', status: 'active' });
    const entry = await latestActivity('user.created', data.id);
    expect(entry).toMatchObject({ actorId: admin.user.id, actorRole: 'admin', requestId: 'req-create-client-1', ip: '127.0.0.1' });
    expect(entry!.after).toMatchObject({ email, role: 'client' });
    await t.app.mailer.idle();
    expect(sink.to(email)).toEqual([]);
  });

  it('creates a password-less account and e-mails a 7-day link to choose a password', async () => {
    const email = uniqueEmail('invited');
    const res = await call('POST', '/admin/users', admin.token, { role: 'client', first_name: 'Tom', last_name: 'Lee', email, lang: 'en', email_verified: true });
    expect(res.statusCode, res.body).toBe(201);
    const data = res.json().data;
    expect(data).toMatchObject({ has_password: false, email_verified: true, lang: 'en' });

    await t.app.mailer.idle();
    const [mail] = sink.to(email);
    expect(mail?.subject).toBe('An account was created for you');
    const match = /https:\/\/app\.example\/reset-password\?token=([A-Za-z0-9_-]+)/.exec(mail!.text);
    expect(match, mail!.text).not.toBeNull();
    const [token] = await t.database.db.select().from(userTokens).where(eq(userTokens.tokenHash, hashToken(match![1]!)));
    expect(token).toMatchObject({ userId: data.id, purpose: 'password_reset_link', usedAt: null, attempts: 0 });
    const days = (token!.expiresAt.getTime() - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(6.99);
    expect(days).toBeLessThan(7.01);

    // The link sets the password through the ordinary reset route, once.
    const reset = { token: match![1], password: 'chosen-by-owner', password_confirmation: 'chosen-by-owner' };
    const set = await call('POST', '/auth/reset-password', undefined, reset);
    expect(set.statusCode, set.body).toBe(200);
    const [row] = await t.database.db.select().from(users).where(eq(users.id, data.id));
    expect(row!.passwordHash).not.toBeNull();
    expect((await call('POST', '/auth/reset-password', undefined, reset)).statusCode).toBe(422);
  });

  it('writes the invitation in French for a French account', async () => {
    const email = uniqueEmail('invite-fr');
    expect((await call('POST', '/admin/users', admin.token, { role: 'client', first_name: 'Zoé', last_name: 'Blanc', email })).statusCode).toBe(201);
    await t.app.mailer.idle();
    const [mail] = sink.to(email);
    expect(mail?.subject).toBe('Un compte a été créé pour vous');
    expect(mail!.text).toContain('Choisir mon mot de passe: https://app.example/reset-password?token=');
  });

  it('creates a prestataire with its business profile, pending validation', async () => {
    const siret = validSiret(unique() + 60_000);
    const spaced = `${siret.slice(0, 3)} ${siret.slice(3, 6)} ${siret.slice(6, 9)} ${siret.slice(9)}`;
    const res = await call('POST', '/admin/users', admin.token, {
      role: 'prestataire',
      first_name: 'Marc',
      last_name: 'Durand',
      email: uniqueEmail('garage'),
      password: 'a-long-enough-secret',
      business_name: 'Garage du Centre',
      siret: spaced,
      address: '3 place Bellecour',
      postal_code: '69002',
      city: 'Lyon',
      latitude: 45.757,
      longitude: 4.832,
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().data.prestataire).toMatchObject({ business_name: 'Garage du Centre', siret, validation_status: 'pending', latitude: 45.757 });

    const duplicate = await call('POST', '/admin/users', admin.token, {
      role: 'prestataire',
      first_name: 'Other',
      last_name: 'Garage',
      email: uniqueEmail('garage'),
      business_name: 'Other',
      siret,
      address: '1 rue',
      postal_code: '69001',
      city: 'Lyon',
    });
    expect(expectError(duplicate, 409, 'conflict').errors).toHaveProperty('siret');
  });

  it('answers 422 for missing prestataire fields, a bad SIRET, an admin role or a mismatched confirmation', async () => {
    const base = { first_name: 'A', last_name: 'B', email: uniqueEmail('bad') };
    const missing = expectError(await call('POST', '/admin/users', admin.token, { ...base, role: 'prestataire' }), 422, 'validation_error');
    expect(Object.keys(missing.errors!).sort()).toEqual(['address', 'business_name', 'city', 'postal_code', 'siret']);
    const badSiret = expectError(
      await call('POST', '/admin/users', admin.token, {
        ...base,
        role: 'prestataire',
        business_name: 'X',
        siret: '12345678901234',
        address: 'a',
        postal_code: '75001',
        city: 'Paris',
        latitude: 48.8,
      }),
      422,
      'validation_error',
    );
    expect(Object.keys(badSiret.errors!).sort()).toEqual(['longitude', 'siret']);
    expect(expectError(await call('POST', '/admin/users', admin.token, { ...base, role: 'admin' }), 422, 'validation_error').errors).toHaveProperty('role');
    expect(expectError(await call('POST', '/admin/users', admin.token, { ...base }), 422, 'validation_error').errors).toHaveProperty('role');
    expect(
      expectError(
        await call('POST', '/admin/users', admin.token, { ...base, role: 'client', password: 'a-long-enough-secret', password_confirmation: 'other-secret' }),
        422,
        'validation_error',
      ).errors,
    ).toHaveProperty('password_confirmation');
    expect(
      expectError(await call('POST', '/admin/users', admin.token, { ...base, role: 'client', email: 'not-an-email' }), 422, 'validation_error').errors,
    ).toHaveProperty('email');
  });

  it('answers 409 for an e-mail already taken', async () => {
    const body = expectError(
      await call('POST', '/admin/users', admin.token, { role: 'client', first_name: 'A', last_name: 'B', email: client.email.toUpperCase() }),
      409,
      'conflict',
    );
    expect(body.errors).toHaveProperty('email');
  });

  it('is for administrators only', async () => {
    await expectAdminOnly('POST', '/admin/users', { role: 'client', first_name: 'A', last_name: 'B', email: uniqueEmail('sec') });
  });
});

describe('GET /admin/users/{user}', () => {
  it('shows the account with its profile, counts and latest activity', async () => {
    const pro = await createPrestataire(t);
    await tokenFor(t, pro.user.id);
    await t.database.db.update(users).set({ lastLoginAt: new Date('2026-01-05T08:00:00Z') }).where(eq(users.id, pro.user.id));
    const warned = await call('POST', `/admin/users/${pro.user.id}/send-warning`, admin.token, { subject: 'Late', message: 'You were late twice.' });
    expect(warned.statusCode, warned.body).toBe(200);

    const res = await call('GET', `/admin/users/${pro.user.id}`, admin.token);
    expect(res.statusCode, res.body).toBe(200);
    const data = res.json().data;
    expect(data).toMatchObject({
      id: pro.user.id,
      role: 'prestataire',
      status_reason: null,
      last_login_at: '2026-01-05T08:00:00.000Z',
      deleted_at: null,
      counts: { active_sessions: 2, devices: 0 },
    });
    expect(data.prestataire.siret).toBe(pro.profile!.siret);
    expect(data.recent_activity.map((e: { action: string }) => e.action)).toEqual(['user.warned', 'user.created']);
    expect(data.recent_activity[0]).toMatchObject({
      actor: { id: admin.user.id, name: `${admin.user.firstName} ${admin.user.lastName}`, role: 'admin' },
      subject_type: 'user',
      subject_id: pro.user.id,
      ip: '127.0.0.1',
    });
    // The factory creates accounts as the platform itself.
    expect(data.recent_activity[1].actor).toBeNull();
  });

  it('keeps showing a deleted account, anonymised', async () => {
    const gone = await createClient(t);
    expect((await call('DELETE', `/admin/users/${gone.user.id}`, admin.token)).statusCode).toBe(200);
    const data = (await call('GET', `/admin/users/${gone.user.id}`, admin.token)).json().data;
    expect(data).toMatchObject({ email: `deleted-${gone.user.id}@deleted.invalid`, deleted_at: expect.any(String), counts: { active_sessions: 0 } });
    expect(data.recent_activity[0].action).toBe('user.deleted');
  });

  it('answers 404 for an unknown account and 422 for a malformed id', async () => {
    expectError(await call('GET', '/admin/users/2000000000', admin.token), 404, 'not_found');
    expectError(await call('GET', '/admin/users/abc', admin.token), 422, 'validation_error');
  });

  it('is for administrators only', async () => {
    await expectAdminOnly('GET', `/admin/users/${client.user.id}`);
  });
});

describe('PUT /admin/users/{user}', () => {
  it('changes the given fields and logs the changed ones before and after', async () => {
    const target = await createClient(t, { phone: '+33600000001' });
    const res = await call('PUT', `/admin/users/${target.user.id}`, admin.token, {
      first_name: 'Renamed',
      last_name: target.user.lastName,
      phone: '07 00 00 00 02',
      lang: 'en',
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ first_name: 'Renamed', last_name: target.user.lastName, phone: '+33700000002', lang: 'en', email_verified: true });
    const entry = await latestActivity('user.updated', target.user.id);
    expect(entry).toMatchObject({ actorId: admin.user.id, ip: '127.0.0.1' });
    expect(entry!.before).toEqual({ first_name: target.user.firstName, phone: '+33600000001', lang: 'fr' });
    expect(entry!.after).toEqual({ first_name: 'Renamed', phone: '+33700000002', lang: 'en' });

    const cleared = await call('PUT', `/admin/users/${target.user.id}`, admin.token, { phone: null });
    expect(cleared.json().data.phone).toBeNull();
  });

  it('makes a new e-mail address unverified, ends links sent to the old one and sends a verification link', async () => {
    const target = await createClient(t);
    await t.database.db.insert(userTokens).values({ userId: target.user.id, purpose: 'password_reset_link', tokenHash: 'x'.repeat(64), expiresAt: new Date(Date.now() + 3_600_000) });
    const email = uniqueEmail('moved');
    const res = await call('PUT', `/admin/users/${target.user.id}`, admin.token, { email });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ email, email_verified: false });
    const entry = await latestActivity('user.updated', target.user.id);
    expect(entry!.before).toEqual({ email: target.email, email_verified: true });
    expect(entry!.after).toEqual({ email, email_verified: false });
    const live = await t.database.db.select().from(userTokens).where(eq(userTokens.userId, target.user.id));
    expect(live.map((r) => r.purpose)).toEqual(['email_verification_link']);
    await t.app.mailer.idle();
    expect(sink.to(email).map((m) => m.subject)).toEqual(['Confirmez votre adresse e-mail']);

    // The administrator may vouch for the new address.
    const vouched = uniqueEmail('vouched');
    const res2 = await call('PUT', `/admin/users/${target.user.id}`, admin.token, { email: vouched, email_verified: true });
    expect(res2.json().data).toMatchObject({ email: vouched, email_verified: true });
  });

  it('answers 409 for an e-mail taken by another account', async () => {
    const target = await createClient(t);
    const body = expectError(await call('PUT', `/admin/users/${target.user.id}`, admin.token, { email: client.email }), 409, 'conflict');
    expect(body.errors).toHaveProperty('email');
  });

  it('answers 422 for an empty or invalid change and 404 for a deleted account', async () => {
    const target = await createClient(t);
    expectError(await call('PUT', `/admin/users/${target.user.id}`, admin.token, {}), 422, 'validation_error');
    expect(expectError(await call('PUT', `/admin/users/${target.user.id}`, admin.token, { lang: 'de' }), 422, 'validation_error').errors).toHaveProperty('lang');
    expect(expectError(await call('PUT', `/admin/users/${target.user.id}`, admin.token, { first_name: '  ' }), 422, 'validation_error').errors).toHaveProperty('first_name');
    expect(expectError(await call('PUT', `/admin/users/${target.user.id}`, admin.token, { email_verified: 'yes' }), 422, 'validation_error').errors).toHaveProperty('email_verified');
    await call('DELETE', `/admin/users/${target.user.id}`, admin.token);
    expectError(await call('PUT', `/admin/users/${target.user.id}`, admin.token, { first_name: 'Back' }), 404, 'not_found');
  });

  it('is for administrators only', async () => {
    await expectAdminOnly('PUT', `/admin/users/${client.user.id}`, { first_name: 'X' });
  });
});

describe('PUT /admin/users/{user}/status', () => {
  it('suspends an account: its sessions end at once, the owner is told why, the change is logged', async () => {
    const target = await createClient(t);
    // A client's token is refused with 403 here while it lives, 401 once its session is gone.
    expectError(await call('GET', '/admin/users', target.token), 403, 'forbidden');

    const res = await call('PUT', `/admin/users/${target.user.id}/status`, admin.token, { status: 'suspended', reason: 'Unpaid invoices' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ status: 'suspended', status_reason: 'Unpaid invoices' });
    expectError(await call('GET', '/admin/users', target.token), 401, 'unauthenticated');
    const live = await t.database.db.select().from(sessions).where(eq(sessions.userId, target.user.id));
    expect(live.every((s) => s.revokedAt !== null)).toBe(true);

    const entry = await latestActivity('user.status_changed', target.user.id);
    expect(entry).toMatchObject({ actorId: admin.user.id, actorRole: 'admin', ip: '127.0.0.1', before: { status: 'active' }, after: { status: 'suspended', reason: 'Unpaid invoices' } });
    const [event] = (await eventsOf(t.database.db, 'user', target.user.id)).filter((e) => e.type === 'user.status_changed');
    expect(event).toMatchObject({ actorId: admin.user.id, payload: { from: 'active', to: 'suspended', status: 'suspended', reason: 'Unpaid invoices' } });

    await t.app.mailer.idle();
    const [mail] = sink.to(target.email);
    expect(mail?.subject).toBe('Votre compte a été suspendu');
    expect(mail!.text).toContain('Motif : Unpaid invoices');

    const back = await call('PUT', `/admin/users/${target.user.id}/status`, admin.token, { status: 'active' });
    expect(back.statusCode, back.body).toBe(200);
    expect(back.json().data).toMatchObject({ status: 'active', status_reason: null });
    await t.app.mailer.idle();
    expect(sink.to(target.email).map((m) => m.subject)).toEqual(['Votre compte a été suspendu', 'Votre compte est de nouveau actif']);

    // The same request again changes nothing: no new entry, no new e-mail.
    const entries = await t.database.db.select().from(activityLog).where(eq(activityLog.subjectId, target.user.id));
    expect((await call('PUT', `/admin/users/${target.user.id}/status`, admin.token, { status: 'active' })).statusCode).toBe(200);
    await t.app.mailer.idle();
    expect(sink.to(target.email)).toHaveLength(2);
    expect(await t.database.db.select().from(activityLog).where(eq(activityLog.subjectId, target.user.id))).toHaveLength(entries.length);
  });

  it('bans an administrator, whose token then answers 401, and tells them in English', async () => {
    const other = await createAdmin(t, { lang: 'en' });
    expect((await call('GET', '/admin/users', other.token)).statusCode).toBe(200);
    const res = await call('PUT', `/admin/users/${other.user.id}/status`, admin.token, { status: 'banned', reason: 'Shared credentials' });
    expect(res.statusCode, res.body).toBe(200);
    expectError(await call('GET', '/admin/users', other.token), 401, 'unauthenticated');
    await t.app.mailer.idle();
    const [mail] = sink.to(other.email);
    expect(mail?.subject).toBe('Your account has been banned');
    expect(mail!.text).toContain('Reason: Shared credentials');
  });

  it('rewords the reason of a suspension, eases a ban to a suspension, and answers 409 with the status to reactivate an active account', async () => {
    const target = await createClient(t);
    const put = (body: object) => call('PUT', `/admin/users/${target.user.id}/status`, admin.token, body);
    expect((await put({ status: 'suspended', reason: 'Unpaid invoices' })).statusCode).toBe(200);
    const reworded = await put({ status: 'suspended', reason: 'Unpaid invoices (March and April)' });
    expect(reworded.statusCode, reworded.body).toBe(200);
    expect(reworded.json().data).toMatchObject({ status: 'suspended', status_reason: 'Unpaid invoices (March and April)' });
    expect(await latestActivity('user.status_changed', target.user.id)).toMatchObject({
      before: { status: 'suspended', reason: 'Unpaid invoices' },
      after: { status: 'suspended', reason: 'Unpaid invoices (March and April)' },
    });
    expect((await put({ status: 'banned', reason: 'Fraud' })).statusCode).toBe(200);
    expect((await put({ status: 'suspended', reason: 'Fraud not proven' })).json().data).toMatchObject({ status: 'suspended' });
    expect((await put({ status: 'active' })).statusCode).toBe(200);

    const again = expectError(await put({ status: 'active', reason: 'Appeal accepted' }), 409, 'conflict');
    expect(again).toMatchObject({ current_status: 'active' });
    const [row] = await t.database.db.select().from(users).where(eq(users.id, target.user.id));
    expect(row).toMatchObject({ status: 'active', statusReason: null });
  });

  it('answers 422 for an unknown status or a missing reason', async () => {
    const target = await createClient(t);
    expect(expectError(await call('PUT', `/admin/users/${target.user.id}/status`, admin.token, { status: 'frozen', reason: 'x' }), 422, 'validation_error').errors).toHaveProperty('status');
    expect(expectError(await call('PUT', `/admin/users/${target.user.id}/status`, admin.token, { status: 'suspended' }), 422, 'validation_error').errors).toHaveProperty('reason');
    expect(expectError(await call('PUT', `/admin/users/${target.user.id}/status`, admin.token, { status: 'banned', reason: '   ' }), 422, 'validation_error').errors).toHaveProperty('reason');
    expectError(await call('PUT', `/admin/users/${target.user.id}/status`, admin.token, {}), 422, 'validation_error');
  });

  it('answers 409 for a change of one\'s own status and 404 for a deleted account', async () => {
    expectError(await call('PUT', `/admin/users/${admin.user.id}/status`, admin.token, { status: 'suspended', reason: 'Holidays' }), 409, 'conflict');
    expectError(await call('PUT', `/admin/users/${admin.user.id}/status`, admin.token, { status: 'active' }), 409, 'conflict');
    const gone = await createClient(t);
    await call('DELETE', `/admin/users/${gone.user.id}`, admin.token);
    expectError(await call('PUT', `/admin/users/${gone.user.id}/status`, admin.token, { status: 'active' }), 404, 'not_found');
    expectError(await call('PUT', '/admin/users/2000000000/status', admin.token, { status: 'active' }), 404, 'not_found');
  });

  it('is for administrators only', async () => {
    await expectAdminOnly('PUT', `/admin/users/${client.user.id}/status`, { status: 'suspended', reason: 'x' });
  });
});

describe('DELETE /admin/users/{user}', () => {
  it('anonymises the account, ends its sessions and logs the deletion', async () => {
    const target = await createPrestataire(t);
    const res = await call('DELETE', `/admin/users/${target.user.id}`, admin.token);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ message: 'Account deleted' });
    const [row] = await t.database.db.select().from(users).where(eq(users.id, target.user.id));
    expect(row).toMatchObject({ email: `deleted-${target.user.id}@deleted.invalid`, firstName: 'Deleted', passwordHash: null, deletedAt: expect.any(Date) });
    expectError(await call('GET', '/admin/users', target.token), 401, 'unauthenticated');
    const entry = await latestActivity('user.deleted', target.user.id);
    expect(entry).toMatchObject({ actorId: admin.user.id, ip: '127.0.0.1', before: expect.objectContaining({ email: target.email }) });
    expectError(await call('DELETE', `/admin/users/${target.user.id}`, admin.token), 404, 'not_found');
  });

  it('deletes another administrator while an active one remains', async () => {
    const other = await createAdmin(t);
    expect((await call('DELETE', `/admin/users/${other.user.id}`, admin.token)).statusCode).toBe(200);
    expectError(await call('GET', '/admin/users', other.token), 401, 'unauthenticated');
  });

  it('answers 409 for one\'s own account', async () => {
    const body = expectError(await call('DELETE', `/admin/users/${admin.user.id}`, admin.token), 409, 'conflict');
    expect(body.message).toMatch(/own account/);
  });

  it('is for administrators only', async () => {
    await expectAdminOnly('DELETE', `/admin/users/${client.user.id}`);
  });
});

describe('POST /admin/users/{user}/send-warning', () => {
  it('e-mails the warning and writes an in-app notification', async () => {
    const target = await createClient(t, { lang: 'en' });
    const res = await call('POST', `/admin/users/${target.user.id}/send-warning`, admin.token, {
      subject: 'Offensive messages',
      message: 'Your last messages to a prestataire broke the rules.\nPlease stay courteous.',
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ message: 'Warning sent' });

    const rows = await t.database.db.select().from(notifications).where(eq(notifications.userId, target.user.id));
    expect(rows).toEqual([
      expect.objectContaining({ type: 'warning', title: 'Offensive messages', body: expect.stringContaining('Please stay courteous.'), readAt: null }),
    ]);
    const entry = await latestActivity('user.warned', target.user.id);
    expect(entry).toMatchObject({ actorId: admin.user.id, ip: '127.0.0.1', after: { subject: 'Offensive messages', notification_id: rows[0]!.id } });

    await t.app.mailer.idle();
    const [mail] = sink.to(target.email);
    expect(mail?.subject).toBe('Warning: Offensive messages');
    expect(mail!.text).toContain('Your last messages to a prestataire broke the rules.');
    expect(mail!.text).toContain("The platform's moderation team");
  });

  it('frames the warning in French for a French account', async () => {
    const target = await createPrestataire(t);
    await call('POST', `/admin/users/${target.user.id}/send-warning`, admin.token, { subject: 'Photos', message: 'Vos photos <b>floues</b> doivent être remplacées.' });
    await t.app.mailer.idle();
    const [mail] = sink.to(target.email);
    expect(mail?.subject).toBe('Avertissement : Photos');
    expect(mail!.html).toContain('Vos photos &lt;b&gt;floues&lt;/b&gt;');
  });

  it('answers 422 for a too short subject or a too long message, 404 for a deleted account', async () => {
    const target = await createClient(t);
    const url = `/admin/users/${target.user.id}/send-warning`;
    expect(expectError(await call('POST', url, admin.token, { subject: 'ab', message: 'long enough' }), 422, 'validation_error').errors).toHaveProperty('subject');
    expect(expectError(await call('POST', url, admin.token, { subject: 'Fine', message: 'x'.repeat(5001) }), 422, 'validation_error').errors).toHaveProperty('message');
    expect(expectError(await call('POST', url, admin.token, { subject: 's'.repeat(151), message: 'ok!' }), 422, 'validation_error').errors).toHaveProperty('subject');
    await call('DELETE', `/admin/users/${target.user.id}`, admin.token);
    expectError(await call('POST', url, admin.token, { subject: 'Fine', message: 'Fine too' }), 404, 'not_found');
    const rows = await t.database.db.select().from(notifications).where(eq(notifications.userId, target.user.id));
    expect(rows).toEqual([]);
  });

  it('is for administrators only', async () => {
    await expectAdminOnly('POST', `/admin/users/${client.user.id}/send-warning`, { subject: 'Hello', message: 'Hello there' });
  });
});
