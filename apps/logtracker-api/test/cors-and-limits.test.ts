import { createHmac } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, createUser, expectError, type TestApp } from './helpers.js';

const ALLOWED = ['http://localhost:3000', 'http://localhost:5173', 'http://localhost:5174'];

// Two apps: one with the default (test) limits for CORS, one with tiny limits. Each rate-limit
// test calls from its own client address so that no test spends another's budget.
let open: TestApp;
let limited: TestApp;
beforeAll(async () => {
  [open, limited] = await Promise.all([
    buildTestApp(),
    buildTestApp({ RATE_LIMIT_PUBLIC: '3', RATE_LIMIT_AUTHENTICATED: '5' }),
  ]);
});
afterAll(async () => {
  await Promise.all([open?.close(), limited?.close()]);
});

let address = 10;
const nextAddress = () => `10.0.${Math.floor(address / 250)}.${(address++ % 250) + 1}`;

function preflight(origin: string, url = '/api/projects', method = 'POST') {
  return open.app.inject({
    method: 'OPTIONS',
    url,
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': 'authorization,content-type',
    },
  });
}

function expectRateLimited(response: LightMyRequestResponse) {
  expectError(response, 429, 'rate_limited');
  const retryAfter = Number(response.headers['retry-after']);
  expect(Number.isInteger(retryAfter), `retry-after: ${String(response.headers['retry-after'])}`).toBe(true);
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(60);
}

describe('CORS', () => {
  it.each(ALLOWED)('allows a preflight from %s with credentials', async (origin) => {
    const response = await preflight(origin);
    expect(response.statusCode).toBeGreaterThanOrEqual(200);
    expect(response.statusCode).toBeLessThan(300);
    expect(response.headers['access-control-allow-origin']).toBe(origin);
    expect(response.headers['access-control-allow-credentials']).toBe('true');
    expect(String(response.headers['access-control-allow-methods'])).toContain('POST');
    expect(String(response.headers['access-control-allow-headers']).toLowerCase()).toContain('authorization');
    expect(String(response.headers.vary).toLowerCase()).toContain('origin');
  });

  it.each([
    ['PUT', '/api/projects/1/config'],
    ['DELETE', '/api/projects/1'],
    ['GET', '/api/user'],
  ])('allows a preflight for %s %s', async (method, url) => {
    const response = await preflight('http://localhost:5173', url, method);
    expect(response.headers['access-control-allow-origin']).toBe('http://localhost:5173');
    expect(String(response.headers['access-control-allow-methods'])).toContain(method);
  });

  it.each(['https://evil.example', 'http://localhost:4000', 'https://localhost:3000', 'http://localhost:3000.evil.example', 'null'])(
    'gives no allow-origin header to a preflight from %s',
    async (origin) => {
      const response = await preflight(origin);
      expect(response.headers['access-control-allow-origin']).toBeUndefined();
      expect(response.headers['access-control-allow-credentials']).toBeUndefined();
    },
  );

  it('adds the CORS headers to actual responses from an allowed origin, errors included', async () => {
    const origin = 'http://localhost:3000';
    const health = await open.app.inject({ method: 'GET', url: '/api/health', headers: { origin } });
    expect(health.statusCode).toBe(200);
    expect(health.headers['access-control-allow-origin']).toBe(origin);
    expect(health.headers['access-control-allow-credentials']).toBe('true');
    expect(String(health.headers['access-control-expose-headers']).toLowerCase()).toContain('x-request-id');

    // A browser can read an error only if the error carries the headers too.
    const denied = await open.app.inject({ method: 'GET', url: '/api/user', headers: { origin } });
    expectError(denied, 401, 'unauthenticated');
    expect(denied.headers['access-control-allow-origin']).toBe(origin);
  });

  it('adds no allow-origin header to actual responses for another origin', async () => {
    const response = await open.app.inject({ method: 'GET', url: '/api/health', headers: { origin: 'https://evil.example' } });
    expect(response.statusCode).toBe(200);
    expect(response.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('rate limits', () => {
  it('answers the 4th unauthenticated POST /api/auth/login in a minute with 429 and Retry-After', async () => {
    const remoteAddress = nextAddress();
    const login = () =>
      limited.app.inject({
        method: 'POST',
        url: '/api/auth/login',
        remoteAddress,
        payload: { email: 'nobody@example.test', password: 'not-the-password' },
      });
    for (let i = 0; i < 3; i++) expectError(await login(), 401, 'unauthenticated');
    expectRateLimited(await login());
    expectRateLimited(await login());
  });

  it('answers the 4th GET /api/user without a token with 429 and Retry-After', async () => {
    const remoteAddress = nextAddress();
    const me = () => limited.app.inject({ method: 'GET', url: '/api/user', remoteAddress });
    for (let i = 0; i < 3; i++) {
      const response = await me();
      expectError(response, 401, 'unauthenticated');
      expect(response.headers['x-ratelimit-limit']).toBe('3');
    }
    expectRateLimited(await me());
  });

  it('shares one public budget across the routes a client calls', async () => {
    const remoteAddress = nextAddress();
    expectError(await limited.app.inject({ method: 'GET', url: '/api/user', remoteAddress }), 401, 'unauthenticated');
    expectError(await limited.app.inject({ method: 'GET', url: '/api/projects', remoteAddress }), 401, 'unauthenticated');
    expectError(
      await limited.app.inject({ method: 'POST', url: '/api/auth/login', remoteAddress, payload: {} }),
      422,
      'validation_error',
    );
    expectRateLimited(
      await limited.app.inject({
        method: 'POST',
        url: '/api/auth/register',
        remoteAddress,
        payload: { name: 'Late', email: 'late@example.test', password: 'long-enough', password_confirmation: 'long-enough' },
      }),
    );
  });

  it('keeps separate budgets for separate client addresses', async () => {
    const first = nextAddress();
    const second = nextAddress();
    for (let i = 0; i < 3; i++) await limited.app.inject({ method: 'GET', url: '/api/user', remoteAddress: first });
    expectRateLimited(await limited.app.inject({ method: 'GET', url: '/api/user', remoteAddress: first }));
    expectError(await limited.app.inject({ method: 'GET', url: '/api/user', remoteAddress: second }), 401, 'unauthenticated');
  });

  it('gives an authenticated user 5 requests a minute, then 429 with Retry-After', async () => {
    const user = await createUser(limited);
    const remoteAddress = nextAddress();
    for (let i = 0; i < 5; i++) {
      const response = await limited.app.inject({ method: 'GET', url: '/api/user', headers: user.headers, remoteAddress });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.headers['x-ratelimit-limit']).toBe('5');
    }
    expectRateLimited(await limited.app.inject({ method: 'GET', url: '/api/user', headers: user.headers, remoteAddress }));
    expectRateLimited(await limited.app.inject({ method: 'GET', url: '/api/projects', headers: user.headers, remoteAddress }));
  });

  it('keeps separate budgets for two users, even from one address', async () => {
    const alice = await createUser(limited);
    const bob = await createUser(limited);
    const remoteAddress = nextAddress();
    const me = (headers: { authorization: string }) =>
      limited.app.inject({ method: 'GET', url: '/api/user', headers, remoteAddress });
    for (let i = 0; i < 5; i++) expect((await me(alice.headers)).statusCode).toBe(200);
    expectRateLimited(await me(alice.headers));
    for (let i = 0; i < 5; i++) {
      const response = await me(bob.headers);
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json().data.id).toBe(bob.id);
    }
    expectRateLimited(await me(bob.headers));
  });

  it("keeps an authenticated user's budget apart from the public budget of the address", async () => {
    const user = await createUser(limited);
    const remoteAddress = nextAddress();
    for (let i = 0; i < 3; i++) await limited.app.inject({ method: 'GET', url: '/api/user', remoteAddress });
    expectRateLimited(await limited.app.inject({ method: 'GET', url: '/api/user', remoteAddress }));
    const response = await limited.app.inject({ method: 'GET', url: '/api/user', headers: user.headers, remoteAddress });
    expect(response.statusCode, response.body).toBe(200);
  });

  it('counts tokens the server did not sign against the public budget, whatever user they name', async () => {
    const remoteAddress = nextAddress();
    const forged = (sub: number) => {
      const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
      const head = `${part({ alg: 'HS256', typ: 'JWT' })}.${part({ sub: String(sub), sid: 'forged' })}`;
      return `${head}.${createHmac('sha256', 'not-the-server-secret').update(head).digest('base64url')}`;
    };
    for (let i = 0; i < 3; i++) {
      const response = await limited.app.inject({
        method: 'GET',
        url: '/api/user',
        remoteAddress,
        headers: { authorization: `Bearer ${forged(1000 + i)}` },
      });
      expectError(response, 401, 'unauthenticated');
    }
    expectRateLimited(
      await limited.app.inject({ method: 'GET', url: '/api/user', remoteAddress, headers: { authorization: `Bearer ${forged(2000)}` } }),
    );
  });

  it('never rate limits GET /api/health', async () => {
    const remoteAddress = nextAddress();
    for (let i = 0; i < 12; i++) {
      const response = await limited.app.inject({ method: 'GET', url: '/api/health', remoteAddress });
      expect(response.statusCode, `request ${i + 1}`).toBe(200);
    }
    // Not even once the address has spent its public budget elsewhere.
    for (let i = 0; i < 3; i++) await limited.app.inject({ method: 'GET', url: '/api/user', remoteAddress });
    expectRateLimited(await limited.app.inject({ method: 'GET', url: '/api/user', remoteAddress }));
    const health = await limited.app.inject({ method: 'GET', url: '/api/health', remoteAddress });
    expect(health.statusCode).toBe(200);
    expect(health.json().data.status).toBe('ok');
    const user = await createUser(limited);
    for (let i = 0; i < 7; i++) {
      expect((await limited.app.inject({ method: 'GET', url: '/api/health', remoteAddress, headers: user.headers })).statusCode).toBe(200);
    }
  });

  it('sends the CORS headers on a 429, so a browser can read it', async () => {
    const remoteAddress = nextAddress();
    const origin = 'http://localhost:5173';
    for (let i = 0; i < 3; i++) await limited.app.inject({ method: 'GET', url: '/api/user', remoteAddress, headers: { origin } });
    const response = await limited.app.inject({ method: 'GET', url: '/api/user', remoteAddress, headers: { origin } });
    expectRateLimited(response);
    expect(response.headers['access-control-allow-origin']).toBe(origin);
  });
});
