import { createLoginThrottle } from '@repo/auth';
import { and, eq } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, cities, sessions, users } from '../src/db/schema/index.js';
import { bearer, buildTestApp, createAdmin, createClient, createPrestataire, expectError, tokenFor, unique, validSiret, type TestApp } from './helpers.js';
import { startSmtpSink } from './mail-sink.js';

let sink: Awaited<ReturnType<typeof startSmtpSink>>;
let t: TestApp;
// The login throttle's clock, moved forward by the tests that wait out a lockout.
let now = Date.now();

beforeAll(async () => {
  sink = await startSmtpSink();
  t = await buildTestApp(
    { SMTP_URL: sink.url, APP_URL: 'https://app.example', RATE_LIMIT_PUBLIC: '100000', RATE_LIMIT_AUTHENTICATED: '100000' },
    { throttle: createLoginThrottle(() => now) },
  );
});
afterAll(async () => {
  await t.close();
  await sink.close();
});

// Each request comes from its own address unless a test says otherwise, so that the per-IP
// throttle only counts what a test means it to.
let addresses = 0;
const freshIp = () => {
  addresses += 1;
  return `10.1.${Math.floor(addresses / 250)}.${(addresses % 250) + 1}`;
};

function post(url: string, payload: unknown, opts: { token?: string; ip?: string } = {}) {
  return t.app.inject({
    method: 'POST',
    url: `/api/v1${url}`,
    payload: payload as object,
    headers: opts.token ? bearer(opts.token) : {},
    remoteAddress: opts.ip ?? freshIp(),
  });
}

const me = (token: string) => t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: bearer(token) });
const login = (email: string, password: string, ip?: string) => post('/auth/login', { email, password }, { ip });

const uniqueEmail = (prefix: string) => `${prefix}${unique()}-${Date.now()}@example.test`;

function clientBody(overrides: Record<string, unknown> = {}) {
  return {
    first_name: 'Léa',
    last_name: 'Martin',
    email: uniqueEmail('lea'),
    password: 'a-long-enough-secret',
    password_confirmation: 'a-long-enough-secret',
    ...overrides,
  };
}

function prestataireBody(overrides: Record<string, unknown> = {}) {
  return {
    ...clientBody({ first_name: 'Paul', last_name: 'Garage', email: uniqueEmail('garage') }),
    business_name: 'Garage du Centre',
    siret: validSiret(unique() + 60_000),
    address: '4 quai Saint-Antoine',
    postal_code: '69002',
    city: 'Lyon',
    latitude: 45.7624,
    longitude: 4.8301,
    ...overrides,
  };
}

function fieldErrors(res: LightMyRequestResponse) {
  return expectError(res, 422, 'validation_error').errors ?? {};
}

/** The claims of one of the server's tokens (read, not verified). */
function sessionIdOf(token: string): string {
  return (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { sid: string }).sid;
}

async function userRow(id: number) {
  const [row] = await t.database.db.select().from(users).where(eq(users.id, id));
  return row!;
}

describe('POST /auth/register/client', () => {
  it('creates a client, signs it in and answers 201 with the user and a working token', async () => {
    const body = clientBody({ email: uniqueEmail('Mixed.Case'), phone: '06 12 34 56 78' });
    const res = await post('/auth/register/client', body);
    expect(res.statusCode, res.body).toBe(201);
    const { data, message } = res.json();
    expect(message).toEqual(expect.any(String));
    expect(data.token_type).toBe('Bearer');
    expect(data.user).toMatchObject({
      role: 'client',
      status: 'active',
      email: body.email.toLowerCase(),
      first_name: 'Léa',
      last_name: 'Martin',
      phone: '+33612345678',
      lang: 'fr',
      email_verified: false,
      email_verified_at: null,
      kyc_status: 'none',
      has_password: true,
      photo_url: null,
      prestataire: null,
    });
    expect(res.body).not.toMatch(/argon2|password_hash/);
    const mine = await me(data.token);
    expect(mine.statusCode).toBe(200);
    expect(mine.json().data.id).toBe(data.user.id);
  });

  it('e-mails a verification link, in French by default', async () => {
    const body = clientBody();
    expect((await post('/auth/register/client', body)).statusCode).toBe(201);
    await t.app.mailer.idle();
    const [mail] = sink.to(body.email);
    expect(mail?.subject).toBe('Confirmez votre adresse e-mail');
    expect(mail!.text).toContain('Bonjour Léa');
    expect(mail!.text).toMatch(/https:\/\/app\.example\/verify-email\?token=[A-Za-z0-9_-]{20,}/);
  });

  it('e-mails the link in English when lang is en, and keeps the language', async () => {
    const body = clientBody({ lang: 'en' });
    const res = await post('/auth/register/client', body);
    expect(res.json().data.user.lang).toBe('en');
    await t.app.mailer.idle();
    const [mail] = sink.to(body.email);
    expect(mail?.subject).toBe('Confirm your e-mail address');
    expect(mail!.text).toContain('Hello Léa');
  });

  it('normalises international phone numbers', async () => {
    for (const [input, stored] of [
      ['+44 20 7946 0958', '+442079460958'],
      ['0033 6 12 34 56 78', '+33612345678'],
      ['01.23.45.67.89', '+33123456789'],
    ] as const) {
      const res = await post('/auth/register/client', clientBody({ phone: input }));
      expect(res.json().data.user.phone, input).toBe(stored);
    }
    const empty = await post('/auth/register/client', clientBody({ phone: '' }));
    expect(empty.json().data.user.phone).toBeNull();
  });

  it('answers 409 on an e-mail already taken, whatever its case', async () => {
    const existing = await createClient(t);
    const res = await post('/auth/register/client', clientBody({ email: existing.email.toUpperCase() }));
    const body = expectError(res, 409, 'conflict');
    expect(body.errors?.email).toEqual(['The email has already been taken']);
  });

  it('answers 422 for every missing field', async () => {
    const errors = fieldErrors(await post('/auth/register/client', {}));
    expect(Object.keys(errors).sort()).toEqual(['email', 'first_name', 'last_name', 'password', 'password_confirmation']);
  });

  it('answers 422 on each invalid field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ email: 'not-an-email' }, 'email'],
      [{ password: 'short', password_confirmation: 'short' }, 'password'],
      [{ password_confirmation: 'something-else' }, 'password_confirmation'],
      [{ first_name: '   ' }, 'first_name'],
      [{ last_name: 'x'.repeat(101) }, 'last_name'],
      [{ phone: '12345' }, 'phone'],
      [{ phone: '+0612345678' }, 'phone'],
      [{ lang: 'de' }, 'lang'],
    ];
    for (const [overrides, field] of cases) {
      const errors = fieldErrors(await post('/auth/register/client', clientBody(overrides)));
      expect(Object.keys(errors), JSON.stringify(overrides)).toEqual([field]);
    }
  });

  it('ignores fields it does not know (no role escalation)', async () => {
    const res = await post('/auth/register/client', clientBody({ role: 'admin', status: 'banned', email_verified_at: new Date().toISOString() }));
    expect(res.statusCode).toBe(201);
    expect(res.json().data.user).toMatchObject({ role: 'client', status: 'active', email_verified: false });
  });

  it('answers 400 on a body that is not JSON', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/register/client',
      headers: { 'content-type': 'application/json' },
      payload: '{"first_name":',
    });
    expectError(res, 400, 'bad_request');
  });
});

describe('POST /auth/register/prestataire', () => {
  it('creates a prestataire with a pending profile; the SIRET may be typed with spaces or dots', async () => {
    const siret = validSiret(unique() + 70_000);
    const typed = `${siret.slice(0, 3)} ${siret.slice(3, 6)}.${siret.slice(6, 9)} ${siret.slice(9)}`;
    const res = await post('/auth/register/prestataire', prestataireBody({ siret: typed }));
    expect(res.statusCode, res.body).toBe(201);
    const { user, token } = res.json().data;
    expect(user.role).toBe('prestataire');
    expect(user.prestataire).toMatchObject({
      business_name: 'Garage du Centre',
      siret,
      address: '4 quai Saint-Antoine',
      postal_code: '69002',
      city: 'Lyon',
      city_id: null,
      latitude: 45.7624,
      longitude: 4.8301,
      validation_status: 'pending',
      validated_at: null,
    });
    const mine = await me(token);
    expect(mine.json().data.prestataire.siret).toBe(siret);
  });

  it('takes the name and coordinates of a city given by city_id', async () => {
    const [city] = await t.database.db
      .insert(cities)
      .values({ inseeCode: `69${unique()}`, name: 'Villeurbanne', postalCodes: ['69100'], departmentCode: '69', latitude: 45.7667, longitude: 4.8803 })
      .returning();
    const body = prestataireBody({ city_id: city!.id, postal_code: '69100' });
    delete (body as Record<string, unknown>).city;
    delete (body as Record<string, unknown>).latitude;
    delete (body as Record<string, unknown>).longitude;
    const res = await post('/auth/register/prestataire', body);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().data.user.prestataire).toMatchObject({ city: 'Villeurbanne', city_id: city!.id, latitude: 45.7667, longitude: 4.8803 });

    // Coordinates of the address, when given too, are kept over the commune's centre.
    const both = await post('/auth/register/prestataire', prestataireBody({ city_id: city!.id, latitude: 45.77, longitude: 4.87 }));
    expect(both.json().data.user.prestataire).toMatchObject({ city: 'Villeurbanne', city_id: city!.id, latitude: 45.77, longitude: 4.87 });
  });

  it('answers 422 on a city_id that names no city', async () => {
    const errors = fieldErrors(await post('/auth/register/prestataire', prestataireBody({ city_id: 999_999, latitude: undefined, longitude: undefined })));
    expect(errors).toEqual({ city_id: ['No city has this id'] });
  });

  it('answers 422 on a SIRET that is not 14 digits passing the checksum', async () => {
    const good = validSiret(unique() + 80_000);
    const wrongCheck = `${good.slice(0, 13)}${(Number(good[13]) + 1) % 10}`;
    for (const siret of [wrongCheck, good.slice(0, 13), `${good.slice(0, 13)}A`, '']) {
      const errors = fieldErrors(await post('/auth/register/prestataire', prestataireBody({ siret })));
      expect(Object.keys(errors), siret).toEqual(['siret']);
    }
  });

  it('answers 409 on a SIRET already registered, and creates no account', async () => {
    const existing = await createPrestataire(t);
    const body = prestataireBody({ siret: existing.profile!.siret });
    const res = expectError(await post('/auth/register/prestataire', body), 409, 'conflict');
    expect(res.errors?.siret).toEqual(['The siret has already been taken']);
    const [row] = await t.database.db.select().from(users).where(eq(users.email, body.email));
    expect(row).toBeUndefined();
  });

  it('answers 422 on each invalid business field', async () => {
    const cases: [Record<string, unknown>, string[]][] = [
      [{ business_name: '' }, ['business_name']],
      [{ address: '' }, ['address']],
      [{ postal_code: '6900' }, ['postal_code']],
      [{ postal_code: 'ABCDE' }, ['postal_code']],
      [{ latitude: undefined }, ['latitude']],
      [{ longitude: undefined }, ['longitude']],
      [{ latitude: 91 }, ['latitude']],
      [{ longitude: -181 }, ['longitude']],
      [{ latitude: undefined, longitude: undefined }, ['city_id']],
      [{ city: undefined }, ['city']],
      [{ city_id: 'lyon' }, ['city_id']],
    ];
    for (const [overrides, fields] of cases) {
      const errors = fieldErrors(await post('/auth/register/prestataire', prestataireBody(overrides)));
      expect(Object.keys(errors).sort(), JSON.stringify(overrides)).toEqual(fields);
    }
  });
});

describe('POST /auth/login', () => {
  it('signs in with a working token and records the sign-in time', async () => {
    const client = await createClient(t);
    const res = await login(client.email.toUpperCase(), client.password);
    expect(res.statusCode, res.body).toBe(200);
    const { data } = res.json();
    expect(data).toMatchObject({ token_type: 'Bearer', user: { id: client.user.id, role: 'client', prestataire: null } });
    expect((await me(data.token)).statusCode).toBe(200);
    expect((await userRow(client.user.id)).lastLoginAt).toBeInstanceOf(Date);
  });

  it('answers the same 401 for an unknown e-mail, a wrong password and an account without password', async () => {
    const client = await createClient(t);
    const social = await createClient(t, { password: null });
    const unknown = await login(uniqueEmail('nobody'), 'whatever-password');
    const wrong = await login(client.email, 'not-the-password');
    const noPassword = await login(social.email, 'whatever-password');
    for (const res of [unknown, wrong, noPassword]) {
      expectError(res, 401, 'unauthenticated');
      expect(res.json()).toEqual({ error: 'unauthenticated', message: 'These credentials do not match our records' });
    }
    expect(wrong.body).toBe(unknown.body);
    expect(noPassword.body).toBe(unknown.body);
  });

  it('answers 422 when a field is missing or malformed', async () => {
    expect(Object.keys(fieldErrors(await post('/auth/login', {}))).sort()).toEqual(['email', 'password']);
    expect(Object.keys(fieldErrors(await post('/auth/login', { email: 'nope', password: 'x' })))).toEqual(['email']);
    expect(Object.keys(fieldErrors(await post('/auth/login', { email: 'a@example.test', password: '' })))).toEqual(['password']);
  });

  it('refuses a suspended or banned account with 403, but only once the password is right', async () => {
    for (const status of ['suspended', 'banned'] as const) {
      const client = await createClient(t);
      await t.database.db.update(users).set({ status }).where(eq(users.id, client.user.id));
      const wrong = await login(client.email, 'not-the-password');
      expect(wrong.json()).toEqual({ error: 'unauthenticated', message: 'These credentials do not match our records' });
      const right = expectError(await login(client.email, client.password), 403, 'forbidden');
      expect(right.message).toMatch(status === 'banned' ? /banned/ : /suspended/);
    }
  });

  it('signs in prestataires and admins too', async () => {
    const prestataire = await createPrestataire(t);
    const res = await login(prestataire.email, prestataire.password);
    expect(res.json().data.user.prestataire.business_name).toBe(prestataire.profile!.businessName);
    const admin = await createAdmin(t);
    expect((await login(admin.email, admin.password)).json().data.user.role).toBe('admin');
  });

  it('does not sign in a deleted account by its former e-mail', async () => {
    const client = await createClient(t);
    await t.database.db.update(users).set({ email: `deleted-${client.user.id}@deleted.invalid`, passwordHash: null, deletedAt: new Date() }).where(eq(users.id, client.user.id));
    expectError(await login(client.email, client.password), 401, 'unauthenticated');
  });
});

describe('POST /auth/login/prestataire', () => {
  it('signs a prestataire in with its profile', async () => {
    const prestataire = await createPrestataire(t, { status: 'validated' });
    const res = await post('/auth/login/prestataire', { email: prestataire.email, password: prestataire.password });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data.user).toMatchObject({ role: 'prestataire', prestataire: { validation_status: 'validated' } });
  });

  it('refuses clients and admins with 403 once the password is right, and 401 otherwise', async () => {
    const client = await createClient(t);
    const body = expectError(await post('/auth/login/prestataire', { email: client.email, password: client.password }), 403, 'forbidden');
    expect(body.message).toMatch(/prestataire/);
    expectError(await post('/auth/login/prestataire', { email: client.email, password: 'not-the-password' }), 401, 'unauthenticated');
    const admin = await createAdmin(t);
    expectError(await post('/auth/login/prestataire', { email: admin.email, password: admin.password }), 403, 'forbidden');
  });
});

describe('login throttling', () => {
  it('makes one address wait after five failures for an account, 429 with Retry-After, doubling each time', async () => {
    const client = await createClient(t);
    const attacker = freshIp();
    for (let i = 0; i < 5; i++) expectError(await login(client.email, `wrong-${i}-password`, attacker), 401, 'unauthenticated');
    const waiting = await login(client.email, client.password, attacker);
    expectError(waiting, 429, 'rate_limited');
    expect(waiting.headers['retry-after']).toBe('1');
    now += 1000;
    expectError(await login(client.email, 'wrong-again-password', attacker), 401, 'unauthenticated');
    expect((await login(client.email, client.password, attacker)).headers['retry-after']).toBe('2');
    now += 2000;
    expect((await login(client.email, client.password, attacker)).statusCode).toBe(200);
  });

  it('lets the owner in from an address that has not failed, however many failures an attacker made', async () => {
    const client = await createClient(t);
    const attacker = freshIp();
    for (let i = 0; i < 5; i++) expectError(await login(client.email, `wrong-${i}-password`, attacker), 401, 'unauthenticated');
    expect((await login(client.email, client.password, freshIp())).statusCode).toBe(200);
    for (let i = 0; i < 10; i++) {
      now += 15 * 60_000;
      expectError(await login(client.email, 'still-wrong-password', attacker), 401, 'unauthenticated');
    }
    expectError(await login(client.email, client.password, attacker), 429, 'rate_limited');
    expect((await login(client.email, client.password, freshIp())).statusCode).toBe(200);
    now += 16 * 60_000;
  });

  it('starts counting again after a successful sign-in from the same address', async () => {
    const client = await createClient(t);
    const ip = freshIp();
    for (let i = 0; i < 4; i++) expectError(await login(client.email, 'wrong-password', ip), 401, 'unauthenticated');
    expect((await login(client.email, client.password, ip)).statusCode).toBe(200);
    for (let i = 0; i < 4; i++) expectError(await login(client.email, 'wrong-password', ip), 401, 'unauthenticated');
    expect((await login(client.email, client.password, ip)).statusCode).toBe(200);
  });

  it('counts unknown e-mails too, and refuses an address after 100 failures across accounts', async () => {
    const ghost = uniqueEmail('ghost');
    const ip = freshIp();
    for (let i = 0; i < 5; i++) expectError(await login(ghost, 'any-password', ip), 401, 'unauthenticated');
    expectError(await login(ghost, 'any-password', ip), 429, 'rate_limited');

    const stuffer = '10.200.0.1';
    for (let i = 0; i < 100; i++) expectError(await login(uniqueEmail('spray'), 'any-password', stuffer), 401, 'unauthenticated');
    const client = await createClient(t);
    const refused = await login(client.email, client.password, stuffer);
    expectError(refused, 429, 'rate_limited');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect((await login(client.email, client.password)).statusCode).toBe(200);
    now += 16 * 60_000;
  });
});

describe('POST /auth/logout', () => {
  it('ends the current session at once and leaves the others', async () => {
    const client = await createClient(t);
    const first = (await login(client.email, client.password)).json().data.token as string;
    const res = await post('/auth/logout', undefined, { token: first });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().message).toEqual(expect.any(String));
    expectError(await me(first), 401, 'unauthenticated');
    expectError(await post('/auth/logout', undefined, { token: first }), 401, 'unauthenticated');
    expect((await me(client.token)).statusCode).toBe(200);
  });

  it('answers 401 without a token or with a forged one', async () => {
    expectError(await post('/auth/logout', undefined), 401, 'unauthenticated');
    expectError(await post('/auth/logout', undefined, { token: 'not.a.jwt' }), 401, 'unauthenticated');
  });

  it('answers 401 to the token of a suspended user', async () => {
    const client = await createClient(t);
    await t.database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, client.user.id));
    expectError(await post('/auth/logout', undefined, { token: client.token }), 401, 'unauthenticated');
  });
});

describe('POST /auth/change-password', () => {
  const change = (token: string, body: Record<string, unknown>, ip?: string) => post('/auth/change-password', body, { token, ip });

  it('changes the password, signs out the other sessions but keeps this one, logs it and tells the owner', async () => {
    const client = await createClient(t);
    const current = (await login(client.email, client.password)).json().data.token as string;
    const other = client.token;
    const res = await change(current, { current_password: client.password, password: 'brand-new-secret', password_confirmation: 'brand-new-secret' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().message).toEqual(expect.any(String));

    expect((await me(current)).statusCode).toBe(200);
    expectError(await me(other), 401, 'unauthenticated');
    expectError(await login(client.email, client.password), 401, 'unauthenticated');
    expect((await login(client.email, 'brand-new-secret')).statusCode).toBe(200);

    const entries = await t.database.db
      .select()
      .from(activityLog)
      .where(and(eq(activityLog.action, 'user.password_changed'), eq(activityLog.subjectId, client.user.id)));
    expect(entries).toEqual([expect.objectContaining({ actorId: client.user.id, subjectType: 'user', after: { has_password: true } })]);
    expect(JSON.stringify(entries)).not.toContain('brand-new-secret');

    await t.app.mailer.idle();
    expect(sink.to(client.email).map((m) => m.subject)).toContain('Votre mot de passe a été modifié');
  });

  it('answers 422 on a wrong or missing current password, and on a bad new one', async () => {
    const client = await createClient(t);
    const next = { password: 'brand-new-secret', password_confirmation: 'brand-new-secret' };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...next, current_password: 'not-the-password' }, 'current_password'],
      [{ ...next }, 'current_password'],
      [{ current_password: client.password, password: client.password, password_confirmation: client.password }, 'password'],
      [{ current_password: client.password, password: 'short', password_confirmation: 'short' }, 'password'],
      [{ current_password: client.password, password: 'brand-new-secret', password_confirmation: 'other-secret' }, 'password_confirmation'],
    ];
    for (const [body, field] of cases) {
      const errors = fieldErrors(await change(client.token, body));
      expect(Object.keys(errors), JSON.stringify(body)).toEqual([field]);
    }
    // Nothing changed.
    expect((await login(client.email, client.password)).statusCode).toBe(200);
    expect((await me(client.token)).statusCode).toBe(200);
  });

  it('throttles guesses of the current password like sign-in', async () => {
    const client = await createClient(t);
    const body = { password: 'brand-new-secret', password_confirmation: 'brand-new-secret' };
    // Each guess from another address: the session, not the address, is what is counted.
    for (let i = 0; i < 5; i++) fieldErrors(await change(client.token, { ...body, current_password: `guess-${i}-password` }));
    const locked = await change(client.token, { ...body, current_password: client.password });
    expectError(locked, 429, 'rate_limited');
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
    // The owner's own sign-in is not held up by the guesses made with a stolen token.
    expect((await login(client.email, client.password)).statusCode).toBe(200);
    now += 16 * 60_000;
    expect((await change(client.token, { ...body, current_password: client.password })).statusCode).toBe(200);
  });

  it('lets an account without a password set one within 15 minutes of signing in', async () => {
    const social = await createClient(t, { password: null });
    const res = await change(social.token, { password: 'first-password!', password_confirmation: 'first-password!' });
    expect(res.statusCode, res.body).toBe(200);
    expect((await me(social.token)).json().data.has_password).toBe(true);
    expect((await login(social.email, 'first-password!')).statusCode).toBe(200);
    const [entry] = await t.database.db.select().from(activityLog).where(and(eq(activityLog.action, 'user.password_changed'), eq(activityLog.subjectId, social.user.id)));
    expect(entry).toMatchObject({ before: { has_password: false }, after: { has_password: true } });
  });

  it('refuses with 403 to set a first password from a session older than 15 minutes', async () => {
    const social = await createClient(t, { password: null });
    await t.database.db
      .update(sessions)
      .set({ createdAt: new Date(Date.now() - 20 * 60_000) })
      .where(eq(sessions.id, sessionIdOf(social.token)));
    expectError(await change(social.token, { password: 'first-password!', password_confirmation: 'first-password!' }), 403, 'forbidden');
    expect((await userRow(social.user.id)).passwordHash).toBeNull();
    const fresh = await tokenFor(t, social.user.id);
    expect((await change(fresh, { password: 'first-password!', password_confirmation: 'first-password!' })).statusCode).toBe(200);
  });

  it('answers 401 without a token and to a suspended user', async () => {
    const body = { current_password: 'x', password: 'brand-new-secret', password_confirmation: 'brand-new-secret' };
    expectError(await post('/auth/change-password', body), 401, 'unauthenticated');
    const client = await createClient(t);
    await t.database.db.update(users).set({ status: 'banned' }).where(eq(users.id, client.user.id));
    expectError(await change(client.token, { ...body, current_password: client.password }), 401, 'unauthenticated');
  });
});
