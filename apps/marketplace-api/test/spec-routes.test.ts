import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, buildTestApp, createAdmin, createClient, tokenFor, type TestApp, type TestUser } from './helpers.js';
import { parseSpecRoutes, SPEC_ROUTES, type SpecRoute } from './spec-routes.js';

// Every method and path of the specification answers under /api/v1, with its access level: a
// public route answers without a token, a Token route refuses a request without one (401) and
// serves a signed-in user, an Admin route refuses a client (403) and serves an administrator.
// Path parameters name nothing that exists: each route must answer with its own 4xx (or 2xx),
// never with "route not found" and never with a 500.

let t: TestApp;
let client: TestUser;
let admin: TestUser;

beforeAll(async () => {
  // Hundreds of requests from one address in a few seconds: the rate limits are another test's subject.
  t = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '1000000', RATE_LIMIT_PUBLIC: '1000000' });
  [client, admin] = await Promise.all([createClient(t), createAdmin(t)]);
});
afterAll(() => t?.close());

// Large enough to name nothing, small enough for an integer column.
const urlOf = (path: string) => `/api/v1${path.replace(/\{[a-z_]+\}/g, '2000000000')}`;
// These end or change the session or the account that makes the call: each gets an account of its own.
const ownAccount = new Set(['POST /auth/logout', 'DELETE /auth/me', 'POST /auth/change-password']);

async function call(route: SpecRoute, token?: string) {
  const [method, path] = route;
  const res = await t.app.inject({
    method,
    url: urlOf(path),
    headers: token ? bearer(token) : {},
    ...(method === 'GET' || method === 'DELETE' ? {} : { payload: {} }),
  });
  const body = res.body ? (JSON.parse(res.body) as { error?: string }) : {};
  expect(body.error, `${method} ${path}`).not.toBe('route_not_found');
  expect(res.statusCode, `${method} ${path}: ${res.body.slice(0, 200)}`).toBeLessThan(500);
  return res.statusCode;
}

describe('the specification’s route tables', () => {
  it('hold 192 method and path pairs, each once', () => {
    expect(SPEC_ROUTES).toHaveLength(192);
    expect(new Set(SPEC_ROUTES.map(([m, p]) => `${m} ${p}`)).size).toBe(192);
  });

  it.skipIf(!process.env.MARKETPLACE_SPEC)('are copied here as the specification gives them (MARKETPLACE_SPEC)', () => {
    expect(SPEC_ROUTES).toEqual(parseSpecRoutes(readFileSync(process.env.MARKETPLACE_SPEC!, 'utf8')));
  });
});

describe.each(SPEC_ROUTES.filter(([, , access]) => access === 'public'))('%s %s (public)', (...route) => {
  it('answers without a token', async () => {
    expect(await call(route)).not.toBe(401);
    if (route[0] === 'GET') {
      const head = await t.app.inject({ method: 'HEAD', url: urlOf(route[1]) });
      expect(head.statusCode).not.toBe(401);
      expect(head.statusCode).toBeLessThan(500);
    }
  });
});

describe.each(SPEC_ROUTES.filter(([, , access]) => access === 'token'))('%s %s (token)', (...route) => {
  it('refuses a request without a token, serves a signed-in user', async () => {
    expect(await call(route)).toBe(401);
    const own = ownAccount.has(`${route[0]} ${route[1]}`) ? (await createClient(t)).token : await tokenFor(t, client.user.id);
    expect(await call(route, own)).not.toBe(401);
  });
});

describe.each(SPEC_ROUTES.filter(([, , access]) => access === 'admin'))('%s %s (admin)', (...route) => {
  it('refuses a request without a token and a client’s, serves an administrator', async () => {
    expect(await call(route)).toBe(401);
    expect(await call(route, client.token)).toBe(403);
    const status = await call(route, admin.token);
    expect(status).not.toBe(401);
    expect(status).not.toBe(403);
  });
});
