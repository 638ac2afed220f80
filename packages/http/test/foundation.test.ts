import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { AppError, createServer, noRateLimit, registerFoundation, type AppInstance } from '../src/index.js';
import { buildApp, FRONTEND_ORIGIN, json } from './helpers.js';

function addRoutes(app: AppInstance) {
  app.get('/ping', async () => ({ data: 'pong' }));
  app.get('/health', { config: noRateLimit }, async () => ({ data: { status: 'ok' } }));
  // Stands in for a route guarded by auth's `onRequest: app.auth.authenticate`.
  app.get(
    '/guarded',
    {
      onRequest: async () => {
        throw new AppError('unauthenticated', 'A valid bearer token is required');
      },
    },
    async () => ({ data: 'secret' }),
  );
  app.get('/custom-limit', { config: { rateLimit: { max: 1, timeWindow: 60_000 } } }, async () => ({ data: 'ok' }));
  app.post(
    '/logs',
    {
      schema: {
        tags: ['logs'],
        summary: 'Ingest a batch of logs',
        body: z.object({ logs: z.array(z.object({ level: z.enum(['info', 'error']), message: z.string() })) }),
        response: { 201: z.object({ data: z.object({ count: z.number().int() }) }) },
      },
    },
    async (request, reply) => reply.status(201).send({ data: { count: request.body.logs.length } }),
  );
  app.get(
    '/vehicles/:id',
    {
      schema: {
        params: z.object({ id: z.coerce.number().int().positive() }),
        querystring: z.object({ include: z.enum(['owner', 'logs']).optional() }),
      },
    },
    async (request) => ({ data: { id: request.params.id } }),
  );
}

const user = (name: string) => ({ 'x-test-user': name });

describe('rate limiting', () => {
  let app: AppInstance;

  beforeAll(async () => {
    app = await buildApp({
      publicLimit: 2,
      authenticatedLimit: 4,
      // Stands in for auth's peekSubject: a cheap name for the caller, or undefined.
      identify: (request) => {
        const header = request.headers['x-test-user'];
        return typeof header === 'string' && header ? header : undefined;
      },
    });
    addRoutes(app);
    await app.ready();
  });

  afterAll(async () => {
    await app.close();
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('answers 429 rate_limited with Retry-After once a public caller is over its budget', async () => {
    const first = await app.inject({ method: 'GET', url: '/ping', remoteAddress: '10.0.0.1' });
    const second = await app.inject({ method: 'GET', url: '/ping', remoteAddress: '10.0.0.1' });
    expect(first.statusCode).toBe(200);
    expect(first.headers['x-ratelimit-limit']).toBe('2');
    expect(first.headers['x-ratelimit-remaining']).toBe('1');
    expect(second.statusCode).toBe(200);
    expect(second.headers['x-ratelimit-remaining']).toBe('0');

    const third = await app.inject({ method: 'GET', url: '/ping', remoteAddress: '10.0.0.1' });
    expect(third.statusCode).toBe(429);
    const body = json(third);
    expect(body.error).toBe('rate_limited');
    expect(body.message).toMatch(/retry in \d+ seconds/);
    const retryAfter = Number(third.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(third.headers['x-request-id']).toEqual(expect.any(String));
  });

  it('counts each IP separately', async () => {
    for (let i = 0; i < 2; i++) {
      expect((await app.inject({ method: 'GET', url: '/ping', remoteAddress: '10.0.0.2' })).statusCode).toBe(200);
    }
    expect((await app.inject({ method: 'GET', url: '/ping', remoteAddress: '10.0.0.2' })).statusCode).toBe(429);
    expect((await app.inject({ method: 'GET', url: '/ping', remoteAddress: '10.0.0.3' })).statusCode).toBe(200);
  });

  it('gives an identified caller the authenticated budget, keyed by user rather than IP', async () => {
    const ip = '10.0.1.1';
    for (let i = 0; i < 4; i++) {
      const res = await app.inject({ method: 'GET', url: '/ping', remoteAddress: ip, headers: user('alice') });
      expect(res.statusCode).toBe(200);
      expect(res.headers['x-ratelimit-limit']).toBe('4');
    }
    const over = await app.inject({ method: 'GET', url: '/ping', remoteAddress: ip, headers: user('alice') });
    expect(over.statusCode).toBe(429);
    expect(json(over).error).toBe('rate_limited');
    expect(over.headers['retry-after']).toBeDefined();

    // Alice on another address is still Alice.
    expect(
      (await app.inject({ method: 'GET', url: '/ping', remoteAddress: '10.0.1.2', headers: user('alice') })).statusCode,
    ).toBe(429);
    // Another user, and the anonymous callers of the same IP, have their own budgets.
    expect((await app.inject({ method: 'GET', url: '/ping', remoteAddress: ip, headers: user('bob') })).statusCode).toBe(200);
    const anonymous = await app.inject({ method: 'GET', url: '/ping', remoteAddress: ip });
    expect(anonymous.statusCode).toBe(200);
    expect(anonymous.headers['x-ratelimit-limit']).toBe('2');
  });

  it('limits error answers and POSTs too', async () => {
    const ip = '10.0.2.1';
    const bad = { method: 'POST' as const, url: '/logs', remoteAddress: ip, payload: { logs: 'nope' } };
    expect((await app.inject(bad)).statusCode).toBe(422);
    expect((await app.inject(bad)).statusCode).toBe(422);
    expect((await app.inject(bad)).statusCode).toBe(429);
  });

  it('counts requests that a route hook rejects before the handler (bad tokens are limited)', async () => {
    const ip = '10.0.2.2';
    const first = await app.inject({ method: 'GET', url: '/guarded', remoteAddress: ip });
    expect(first.statusCode).toBe(401);
    expect(first.headers['x-ratelimit-remaining']).toBe('1');
    expect((await app.inject({ method: 'GET', url: '/guarded', remoteAddress: ip })).statusCode).toBe(401);
    const third = await app.inject({ method: 'GET', url: '/guarded', remoteAddress: ip });
    expect(third.statusCode).toBe(429);
    expect(json(third).error).toBe('rate_limited');
  });

  it('limits requests for unknown routes too', async () => {
    const ip = '10.0.2.3';
    expect((await app.inject({ method: 'GET', url: '/scan/1', remoteAddress: ip })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/scan/2', remoteAddress: ip })).statusCode).toBe(404);
    const third = await app.inject({ method: 'GET', url: '/scan/3', remoteAddress: ip });
    expect(third.statusCode).toBe(429);
    expect(third.headers['retry-after']).toBeDefined();
  });

  it('honours a route’s own limit, counted once per request', async () => {
    const ip = '10.0.2.4';
    const first = await app.inject({ method: 'GET', url: '/custom-limit', remoteAddress: ip });
    expect(first.statusCode).toBe(200);
    expect(first.headers['x-ratelimit-limit']).toBe('1');
    expect((await app.inject({ method: 'GET', url: '/custom-limit', remoteAddress: ip })).statusCode).toBe(429);
    // The route's budget is its own: the IP still has its global budget elsewhere.
    expect((await app.inject({ method: 'GET', url: '/ping', remoteAddress: ip })).headers['x-ratelimit-remaining']).toBe('1');
  });

  it('does not count CORS preflights', async () => {
    const ip = '10.0.2.5';
    for (let i = 0; i < 4; i++) {
      const preflight = await app.inject({
        method: 'OPTIONS',
        url: '/ping',
        remoteAddress: ip,
        headers: { origin: FRONTEND_ORIGIN, 'access-control-request-method': 'GET' },
      });
      expect(preflight.statusCode).toBe(204);
    }
    expect((await app.inject({ method: 'GET', url: '/ping', remoteAddress: ip })).headers['x-ratelimit-remaining']).toBe('1');
  });

  it('opens the budget again when the window has passed', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const ip = '10.0.3.1';
    await app.inject({ method: 'GET', url: '/ping', remoteAddress: ip });
    await app.inject({ method: 'GET', url: '/ping', remoteAddress: ip });
    expect((await app.inject({ method: 'GET', url: '/ping', remoteAddress: ip })).statusCode).toBe(429);
    vi.advanceTimersByTime(30_000);
    expect((await app.inject({ method: 'GET', url: '/ping', remoteAddress: ip })).statusCode).toBe(429);
    vi.advanceTimersByTime(30_001);
    expect((await app.inject({ method: 'GET', url: '/ping', remoteAddress: ip })).statusCode).toBe(200);
  });

  it('leaves routes marked noRateLimit and the documentation alone', async () => {
    const ip = '10.0.4.1';
    for (let i = 0; i < 5; i++) {
      const health = await app.inject({ method: 'GET', url: '/health', remoteAddress: ip });
      expect(health.statusCode).toBe(200);
      expect(health.headers['x-ratelimit-limit']).toBeUndefined();
      expect((await app.inject({ method: 'GET', url: '/docs/json', remoteAddress: ip })).statusCode).toBe(200);
    }
    // The ignored requests spent nothing of the IP's budget.
    expect((await app.inject({ method: 'GET', url: '/ping', remoteAddress: ip })).headers['x-ratelimit-remaining']).toBe('1');
  });
});

describe('CORS', () => {
  let app: AppInstance;

  beforeAll(async () => {
    app = await buildApp();
    addRoutes(app);
    await app.ready();
  });

  afterAll(async () => {
    await app.close();
  });

  it('allows a preflight from a configured origin, with credentials', async () => {
    const res = await app.inject({
      method: 'OPTIONS',
      url: '/logs',
      headers: {
        origin: FRONTEND_ORIGIN,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type, authorization',
      },
    });
    expect(res.statusCode).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe(FRONTEND_ORIGIN);
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    const methods = String(res.headers['access-control-allow-methods']).split(/,\s*/);
    expect(methods).toEqual(expect.arrayContaining(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']));
    expect(String(res.headers['access-control-allow-headers']).toLowerCase()).toContain('authorization');
  });

  it('exposes the request id and rate-limit headers to a configured origin', async () => {
    const res = await app.inject({ method: 'GET', url: '/ping', headers: { origin: FRONTEND_ORIGIN } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe(FRONTEND_ORIGIN);
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    const exposed = String(res.headers['access-control-expose-headers']).split(/,\s*/);
    expect(exposed).toEqual(expect.arrayContaining(['x-request-id', 'retry-after', 'x-ratelimit-remaining']));
    expect(String(res.headers.vary)).toMatch(/Origin/);
  });

  it('sends no CORS headers to a request without an Origin (not a browser), only Vary: Origin', async () => {
    const res = await app.inject({ method: 'GET', url: '/ping' });
    expect(res.statusCode).toBe(200);
    for (const name of ['access-control-allow-origin', 'access-control-allow-credentials', 'access-control-expose-headers']) {
      expect(res.headers[name], name).toBeUndefined();
    }
    expect(String(res.headers.vary)).toMatch(/Origin/);
  });

  it('does not allow an unknown origin', async () => {
    const preflight = await app.inject({
      method: 'OPTIONS',
      url: '/logs',
      headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
    expect(preflight.headers['access-control-allow-credentials']).toBeUndefined();
    expect(preflight.headers['access-control-allow-methods']).toBeUndefined();

    const simple = await app.inject({ method: 'GET', url: '/ping', headers: { origin: 'http://localhost:5999' } });
    expect(simple.statusCode).toBe(200);
    expect(simple.headers['access-control-allow-origin']).toBeUndefined();
    expect(simple.headers['access-control-allow-credentials']).toBeUndefined();
  });

  it('allows every browser origin when the list is *, naming the origin (a credentialed request refuses *)', async () => {
    const open = await buildApp({ corsOrigins: ['*'] });
    addRoutes(open);
    try {
      const res = await open.inject({ method: 'GET', url: '/ping', headers: { origin: 'https://any.example' } });
      expect(res.headers['access-control-allow-origin']).toBe('https://any.example');
      expect(res.headers['access-control-allow-credentials']).toBe('true');
      const none = await open.inject({ method: 'GET', url: '/ping' });
      expect(none.headers['access-control-allow-origin']).toBeUndefined();
    } finally {
      await open.close();
    }
  });
});

describe('OpenAPI document', () => {
  let app: AppInstance;

  beforeAll(async () => {
    app = await buildApp();
    addRoutes(app);
    await app.ready();
  });

  afterAll(async () => {
    await app.close();
  });

  it('serves an OpenAPI 3 document with the routes at /docs/json', async () => {
    const res = await app.inject({ method: 'GET', url: '/docs/json' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const doc = JSON.parse(res.body) as {
      openapi: string;
      info: { title: string; version: string; description: string };
      tags: { name: string }[];
      paths: Record<string, Record<string, { requestBody?: unknown; parameters?: { name: string; in: string }[]; tags?: string[] }>>;
      components: { securitySchemes: Record<string, { type: string; scheme: string }> };
    };
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.info).toEqual({
      title: 'Test API',
      description: 'The API the shared http package tests run against',
      version: '1.0.0',
    });
    expect(doc.tags.map((t) => t.name)).toEqual(['logs']);
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });

    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/ping', '/health', '/logs', '/vehicles/{id}']));
    const post = doc.paths['/logs']!.post!;
    expect(post.tags).toEqual(['logs']);
    const bodySchema = JSON.stringify(post.requestBody);
    expect(bodySchema).toContain('"logs"');
    expect(bodySchema).toContain('"level"');
    const vehicle = doc.paths['/vehicles/{id}']!.get!;
    expect(vehicle.parameters).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'id', in: 'path' }),
        expect.objectContaining({ name: 'include', in: 'query' }),
      ]),
    );
    // The documentation's own routes are not part of the API it documents.
    expect(Object.keys(doc.paths).some((p) => p.startsWith('/docs'))).toBe(false);
  });

  it('serves a browsable page at /docs', async () => {
    const res = await app.inject({ method: 'GET', url: '/docs' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(res.body).toMatch(/swagger/i);
  });

  it('answers HEAD on a documented GET route', async () => {
    const res = await app.inject({ method: 'HEAD', url: '/vehicles/3?include=owner' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('');
    expect(Number(res.headers['content-length'])).toBe(JSON.stringify({ data: { id: 3 } }).length);
  });
});

describe('rate limiting with an unreachable Redis store', () => {
  it('fails open: requests are answered rather than refused', async () => {
    const app = createServer({ logLevel: 'silent' });
    await registerFoundation(app, {
      cors: { origins: [] },
      // Port 1 on loopback: nothing listens, the connection is refused at once.
      rateLimit: { authenticated: 1, public: 1, store: 'redis', redisUrl: 'redis://127.0.0.1:1' },
      docs: { title: 'Down', description: 'Redis is down', version: '1.0.0', prefix: '/docs' },
    });
    addRoutes(app);
    try {
      for (let i = 0; i < 3; i++) {
        expect((await app.inject({ method: 'GET', url: '/ping' })).statusCode).toBe(200);
      }
    } finally {
      await app.close();
    }
  }, 10_000);
});
