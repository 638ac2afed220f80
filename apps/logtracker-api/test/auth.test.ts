import { createHmac } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { users } from '../src/db/schema/index.js';
import { buildTestApp, createUser, expectError, PASSWORD, type TestApp } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(() => t.close());

let sequence = 0;
const uniqueEmail = (prefix = 'auth') => `${prefix}-${Date.now().toString(36)}-${sequence++}@example.test`;

function registration(overrides: Record<string, unknown> = {}) {
  return {
    name: 'Ada Lovelace',
    email: uniqueEmail('register'),
    password: 'analytical-engine',
    password_confirmation: 'analytical-engine',
    ...overrides,
  };
}

const register = (payload: unknown) => t.app.inject({ method: 'POST', url: '/api/auth/register', payload: payload as object });
const login = (email: string, password: string, remoteAddress = '127.0.0.1') =>
  t.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email, password }, remoteAddress });
const me = (token?: string) =>
  t.app.inject({ method: 'GET', url: '/api/user', headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
const logout = (token: string) =>
  t.app.inject({ method: 'POST', url: '/api/auth/logout', headers: { authorization: `Bearer ${token}` } });

/** A compact HS256 JWT signed with any secret, to prove the server checks whose key signed it. */
function signHs256(payload: Record<string, unknown>, secret: string) {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const head = part({ alg: 'HS256', typ: 'JWT' });
  const body = part(payload);
  const signature = createHmac('sha256', secret).update(`${head}.${body}`).digest('base64url');
  return `${head}.${body}.${signature}`;
}

/** The claims of one of the server's tokens (read, not verified). */
function claimsOf(token: string): { sub: string; sid: string } {
  const payload = token.split('.')[1];
  if (!payload) throw new Error('not a JWT');
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { sub: string; sid: string };
}

async function storedHash(email: string) {
  const [row] = await t.database.db.select({ hash: users.passwordHash }).from(users).where(eq(users.email, email));
  if (!row) throw new Error(`no user ${email}`);
  return row.hash;
}

/** No response ever carries a password, its hash, or a field that looks like one. */
function expectNoSecrets(response: LightMyRequestResponse, hash: string) {
  expect(response.body).not.toContain(hash);
  expect(response.body).not.toMatch(/\$argon2/);
  expect(response.body.toLowerCase()).not.toContain('password_hash');
  expect(response.body).not.toContain('passwordHash');
}

const USER_KEYS = ['created_at', 'email', 'id', 'name', 'updated_at'];

describe('POST /api/auth/register', () => {
  it('creates the account and answers 201 with the user and a working bearer token', async () => {
    const body = registration();
    const response = await register(body);
    expect(response.statusCode, response.body).toBe(201);
    const { data } = response.json();
    expect(Object.keys(data.user).sort()).toEqual(USER_KEYS);
    expect(data.user).toMatchObject({ name: 'Ada Lovelace', email: body.email });
    expect(Number.isInteger(data.user.id)).toBe(true);
    expect(new Date(data.user.created_at).toISOString()).toBe(data.user.created_at);
    expect(data.token_type).toBe('Bearer');
    expect(typeof data.token).toBe('string');

    const current = await me(data.token);
    expect(current.statusCode, current.body).toBe(200);
    expect(current.json().data).toEqual(data.user);
  });

  it('stores and answers the e-mail lower-cased and trimmed', async () => {
    const email = uniqueEmail('MiXeD').toUpperCase();
    const response = await register(registration({ email: `  ${email} ` }));
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json().data.user.email).toBe(email.toLowerCase());
    const [row] = await t.database.db.select().from(users).where(eq(users.email, email.toLowerCase()));
    expect(row?.email).toBe(email.toLowerCase());

    // The account is reachable by any casing of the address.
    const signedIn = await login(email, 'analytical-engine');
    expect(signedIn.statusCode, signedIn.body).toBe(200);
  });

  it('answers 409 conflict with errors.email for an e-mail already taken, whatever its casing', async () => {
    const body = registration();
    expect((await register(body)).statusCode).toBe(201);

    const again = expectError(await register({ ...body, name: 'Someone Else' }), 409, 'conflict');
    expect(again.errors?.email?.length).toBeGreaterThan(0);

    const shouted = expectError(await register({ ...body, email: body.email.toUpperCase() }), 409, 'conflict');
    expect(shouted.errors?.email?.length).toBeGreaterThan(0);

    const rows = await t.database.db.select().from(users).where(eq(users.email, body.email));
    expect(rows).toHaveLength(1);
    expect(rows[0]?.name).toBe('Ada Lovelace');
  });

  it.each([
    ['name', 'missing', { name: undefined }],
    ['name', 'blank', { name: '   ' }],
    ['email', 'missing', { email: undefined }],
    ['email', 'not an e-mail', { email: 'not-an-email' }],
    ['password', 'shorter than 8 characters', { password: 'short7c', password_confirmation: 'short7c' }],
    ['password', 'missing', { password: undefined }],
    ['password_confirmation', 'different from the password', { password_confirmation: 'something-else' }],
    ['password_confirmation', 'missing', { password_confirmation: undefined }],
  ])('answers 422 keyed by %s when it is %s', async (field, _why, change) => {
    const body = registration(change);
    const error = expectError(await register(body), 422, 'validation_error');
    expect(Object.keys(error.errors ?? {})).toEqual([field]);
    expect(error.errors?.[field]?.[0]).toEqual(expect.any(String));
    if (typeof body.email === 'string') {
      expect(await t.database.db.select().from(users).where(eq(users.email, body.email))).toHaveLength(0);
    }
  });

  it('reports every failing field at once', async () => {
    const error = expectError(
      await register({ name: '', email: 'nope', password: 'short', password_confirmation: 'short' }),
      422,
      'validation_error',
    );
    expect(Object.keys(error.errors ?? {}).sort()).toEqual(['email', 'name', 'password']);
  });

  it('answers 400 bad_request for malformed JSON', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/auth/register',
      headers: { 'content-type': 'application/json' },
      payload: '{"name": "Ada", "email": ',
    });
    expectError(response, 400, 'bad_request');
  });

  it('answers 400 bad_request for a body that is not JSON', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/auth/register',
      headers: { 'content-type': 'text/plain' },
      payload: 'name=Ada',
    });
    expectError(response, 400, 'bad_request');
  });

  it('never answers the password or its hash', async () => {
    const body = registration();
    const created = await register(body);
    expect(created.statusCode).toBe(201);
    const hash = await storedHash(body.email);
    expect(hash).toMatch(/^\$argon2id\$/);
    expect(created.body).not.toContain(body.password);
    expectNoSecrets(created, hash);

    const signedIn = await login(body.email, body.password);
    expect(signedIn.statusCode).toBe(200);
    expect(signedIn.body).not.toContain(body.password);
    expectNoSecrets(signedIn, hash);

    const current = await me(signedIn.json().data.token);
    expect(current.statusCode).toBe(200);
    expectNoSecrets(current, hash);
  });
});

describe('POST /api/auth/login', () => {
  it('answers 200 with the user and a new working token', async () => {
    const user = await createUser(t);
    const response = await login(user.email, PASSWORD);
    expect(response.statusCode, response.body).toBe(200);
    const { data } = response.json();
    expect(Object.keys(data.user).sort()).toEqual(USER_KEYS);
    expect(data.user).toMatchObject({ id: user.id, email: user.email, name: user.name });
    expect(data.token_type).toBe('Bearer');
    expect(data.token).not.toBe(user.token);
    const current = await me(data.token);
    expect(current.statusCode).toBe(200);
    expect(current.json().data.id).toBe(user.id);
  });

  it('gives the same 401 for a wrong password and for an unknown e-mail', async () => {
    const user = await createUser(t);
    const wrongPassword = await login(user.email, 'not the password');
    const unknownEmail = await login(uniqueEmail('nobody'), 'not the password');
    const body = expectError(wrongPassword, 401, 'unauthenticated');
    expectError(unknownEmail, 401, 'unauthenticated');
    expect(unknownEmail.json()).toEqual(body);
    expect(body.errors).toBeUndefined();
    expect(wrongPassword.headers['www-authenticate']).toBe(unknownEmail.headers['www-authenticate']);
  });

  it('answers 422 for a missing password or an invalid e-mail', async () => {
    const missing = expectError(
      await t.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: uniqueEmail() } }),
      422,
      'validation_error',
    );
    expect(Object.keys(missing.errors ?? {})).toEqual(['password']);
    const invalid = expectError(await login('not-an-email', 'whatever-password'), 422, 'validation_error');
    expect(Object.keys(invalid.errors ?? {})).toEqual(['email']);
  });

  it('makes the failing address wait after 5 failures (429 with Retry-After), even with the right password', async () => {
    const user = await createUser(t);
    for (let i = 0; i < 5; i++) {
      expectError(await login(user.email, `wrong password ${i}`), 401, 'unauthenticated');
    }
    const locked = await login(user.email, PASSWORD);
    expectError(locked, 429, 'rate_limited');
    const retryAfter = Number(locked.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThan(0);
    expect(locked.body).not.toContain('token');

    // The wait is per e-mail (whatever its casing) and address: another account still signs in
    // from this address, and the owner from an address that has not failed.
    expectError(await login(user.email.toUpperCase(), PASSWORD), 429, 'rate_limited');
    const other = await createUser(t);
    expect((await login(other.email, PASSWORD)).statusCode).toBe(200);
    expect((await login(user.email, PASSWORD, '198.51.100.23')).statusCode).toBe(200);
  });

  it('forgets earlier failures after a successful login', async () => {
    const user = await createUser(t);
    for (let i = 0; i < 4; i++) expectError(await login(user.email, 'wrong password'), 401, 'unauthenticated');
    expect((await login(user.email, PASSWORD)).statusCode).toBe(200);
    for (let i = 0; i < 4; i++) expectError(await login(user.email, 'wrong password'), 401, 'unauthenticated');
    expect((await login(user.email, PASSWORD)).statusCode).toBe(200);
  });
});

describe('POST /api/auth/logout', () => {
  it('ends the current session at once while other sessions of the user keep working', async () => {
    const user = await createUser(t);
    const first = (await login(user.email, PASSWORD)).json().data.token as string;
    const second = (await login(user.email, PASSWORD)).json().data.token as string;
    expect((await me(first)).statusCode).toBe(200);

    const response = await logout(first);
    expect(response.statusCode, response.body).toBe(200);
    expect(typeof response.json().message).toBe('string');

    expectError(await me(first), 401, 'unauthenticated');
    expectError(await logout(first), 401, 'unauthenticated');
    expect((await me(second)).statusCode).toBe(200);
    expect((await me(user.token)).statusCode).toBe(200);
  });

  it('answers 401 without a token', async () => {
    expectError(await t.app.inject({ method: 'POST', url: '/api/auth/logout' }), 401, 'unauthenticated');
  });
});

describe('GET /api/user', () => {
  it('answers the authenticated user', async () => {
    const user = await createUser(t, { name: 'Grace Hopper' });
    const response = await me(user.token);
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toMatchObject({ id: user.id, name: 'Grace Hopper', email: user.email });
  });

  it('answers 401 without a token', async () => {
    expectError(await me(), 401, 'unauthenticated');
  });

  it.each([
    ['a garbage token', 'Bearer not-a-jwt'],
    ['a truncated token', 'Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0'],
    ['another scheme', 'Basic dXNlcjpwYXNz'],
    ['an empty bearer', 'Bearer '],
  ])('answers 401 for %s', async (_what, authorization) => {
    expectError(await t.app.inject({ method: 'GET', url: '/api/user', headers: { authorization } }), 401, 'unauthenticated');
  });

  it('answers 401 for a token signed with a different secret, naming a live session', async () => {
    const user = await createUser(t);
    const claims = claimsOf(user.token);

    // The same claims signed with the server's own key work: the forged token differs only in its key.
    const genuine = signHs256({ sub: claims.sub, sid: claims.sid, iat: Math.floor(Date.now() / 1000) }, t.config.auth.jwtSecret);
    expect((await me(genuine)).statusCode).toBe(200);

    const forged = signHs256({ sub: claims.sub, sid: claims.sid, iat: Math.floor(Date.now() / 1000) }, 'x'.repeat(43));
    expectError(await me(forged), 401, 'unauthenticated');
  });

  it('answers 401 for an unsigned token (alg none)', async () => {
    const user = await createUser(t);
    const claims = claimsOf(user.token);
    const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const unsigned = `${part({ alg: 'none', typ: 'JWT' })}.${part({ sub: claims.sub, sid: claims.sid })}.`;
    expectError(await me(unsigned), 401, 'unauthenticated');
  });

  it("answers 401 for a token that pairs one user's id with another user's session", async () => {
    const alice = await createUser(t);
    const bob = await createUser(t);
    // Signed with the server's own key, so only the session check can refuse it.
    const mixed = signHs256({ sub: String(bob.id), sid: claimsOf(alice.token).sid }, t.config.auth.jwtSecret);
    expectError(await me(mixed), 401, 'unauthenticated');
  });
});
