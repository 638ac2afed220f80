import { Agent, get, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AppError, createServer, noRateLimit, pageMeta, pageOffset, REDACTED_HEADERS, redactUrl, type AppInstance } from '../src/index.js';
import { buildApp, json } from './helpers.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const logsBody = z.object({
  source: z.string().min(3).regex(/^[a-z]+$/, 'Lowercase letters only'),
  logs: z
    .array(
      z.object({
        level: z.enum(['debug', 'info', 'warn', 'error']),
        message: z.string().min(1),
      }),
    )
    .min(1),
});

const listQuery = z.object({
  page: z.coerce.number().int().min(1).default(1),
  per_page: z.coerce.number().int().min(1).max(100).default(15),
  q: z.string().optional(),
});

const idParams = z.object({ id: z.coerce.number().int().positive() });

function addRoutes(app: AppInstance) {
  app.post('/logs', { schema: { body: logsBody } }, async (request, reply) => {
    return reply.status(201).send({ data: request.body, message: `${request.body.logs.length} logs stored` });
  });
  app.get('/items', { schema: { querystring: listQuery } }, async (request) => {
    const { page, per_page, q } = request.query;
    return { data: { offset: pageOffset(page, per_page), q: q ?? null }, meta: pageMeta(page, per_page, 42) };
  });
  app.get('/items/:id', { schema: { params: idParams } }, async (request) => ({ data: { id: request.params.id } }));
  app.post('/items', async () => {
    throw new AppError('conflict', 'An item with this name already exists');
  });
  app.get('/missing', async () => {
    throw AppError.notFound('Vehicle');
  });
  app.get('/boom', async () => {
    throw new Error('connect ECONNREFUSED 10.0.0.7:5432 select * from users where password_hash = $1');
  });
  app.get('/forbidden-ish', async () => {
    throw Object.assign(new Error('Only owners may do that'), { statusCode: 403 });
  });
  app.get(
    '/wrong-shape',
    { schema: { response: { 200: z.object({ data: z.object({ id: z.number() }) }) } } },
    // The handler breaks its own response contract on purpose.
    async () => JSON.parse('{"data":{"id":"not-a-number","secret":"x"}}') as { data: { id: number } },
  );
  app.get('/health', { config: noRateLimit }, async () => ({ data: { status: 'ok' } }));
}

let app: AppInstance;

beforeAll(async () => {
  app = await buildApp({ bodyLimit: 2048 });
  addRoutes(app);
  await app.ready();
});

afterAll(async () => {
  await app.close();
});

describe('validation errors', () => {
  it('accepts a valid body and answers the route', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/logs',
      payload: { source: 'api', logs: [{ level: 'info', message: 'started' }] },
    });
    expect(res.statusCode).toBe(201);
    expect(json(res)).toEqual({
      data: { source: 'api', logs: [{ level: 'info', message: 'started' }] },
      message: '1 logs stored',
    });
  });

  it('answers 422 with every failing field under its dotted path', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/logs',
      payload: {
        source: 'api',
        logs: [
          { level: 'info', message: 'fine' },
          { level: 'loud', message: 'bad level' },
          { level: 'warn', message: '' },
        ],
      },
    });
    expect(res.statusCode).toBe(422);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const body = json(res);
    expect(body.error).toBe('validation_error');
    expect(body.message).toEqual(expect.any(String));
    const errors = body.errors as Record<string, string[]>;
    expect(Object.keys(errors).sort()).toEqual(['logs.1.level', 'logs.2.message']);
    expect(errors['logs.1.level']).toHaveLength(1);
    expect(errors['logs.1.level']![0]).toEqual(expect.any(String));
    expect(errors['logs.2.message']![0]!.length).toBeGreaterThan(0);
  });

  it('lists several messages for one field when several rules fail', async () => {
    const res = await app.inject({ method: 'POST', url: '/logs', payload: { source: 'A!', logs: [] } });
    expect(res.statusCode).toBe(422);
    const errors = json(res).errors as Record<string, string[]>;
    expect(errors.source!.length).toBeGreaterThanOrEqual(2);
    expect(errors.source).toContain('Lowercase letters only');
    expect(errors.logs).toHaveLength(1);
  });

  it('names missing required fields', async () => {
    const res = await app.inject({ method: 'POST', url: '/logs', payload: { logs: [{}] } });
    expect(res.statusCode).toBe(422);
    const errors = json(res).errors as Record<string, string[]>;
    expect(Object.keys(errors).sort()).toEqual(['logs.0.level', 'logs.0.message', 'source']);
  });

  it('reports a missing body under "body"', async () => {
    const res = await app.inject({ method: 'POST', url: '/logs' });
    expect(res.statusCode).toBe(422);
    const body = json(res);
    expect(body.error).toBe('validation_error');
    expect(Object.keys(body.errors as Record<string, string[]>)).toEqual(['body']);
  });

  it('ignores unknown body fields instead of passing them on', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/logs',
      payload: { source: 'api', role: 'admin', logs: [{ level: 'debug', message: 'x', user_id: 1 }] },
    });
    expect(res.statusCode).toBe(201);
    expect(json(res).data).toEqual({ source: 'api', logs: [{ level: 'debug', message: 'x' }] });
  });

  it('coerces and defaults querystring values', async () => {
    const res = await app.inject({ method: 'GET', url: '/items?page=3&per_page=10&q=brake' });
    expect(res.statusCode).toBe(200);
    expect(json(res)).toEqual({
      data: { offset: 20, q: 'brake' },
      meta: { current_page: 3, per_page: 10, total: 42, last_page: 5 },
    });
    const defaults = await app.inject({ method: 'GET', url: '/items' });
    expect(json(defaults).meta).toEqual({ current_page: 1, per_page: 15, total: 42, last_page: 3 });
  });

  it('answers 422 for out-of-range querystring values, field by field', async () => {
    const res = await app.inject({ method: 'GET', url: '/items?page=0&per_page=101' });
    expect(res.statusCode).toBe(422);
    const body = json(res);
    expect(body.error).toBe('validation_error');
    expect(Object.keys(body.errors as Record<string, string[]>).sort()).toEqual(['page', 'per_page']);
  });

  it('answers 422 for a non-numeric querystring value', async () => {
    const res = await app.inject({ method: 'GET', url: '/items?page=abc' });
    expect(res.statusCode).toBe(422);
    expect(Object.keys(json(res).errors as Record<string, string[]>)).toEqual(['page']);
  });

  it('validates path params', async () => {
    const ok = await app.inject({ method: 'GET', url: '/items/17' });
    expect(ok.statusCode).toBe(200);
    expect(json(ok)).toEqual({ data: { id: 17 } });

    const bad = await app.inject({ method: 'GET', url: '/items/-4' });
    expect(bad.statusCode).toBe(422);
    expect(json(bad).error).toBe('validation_error');
    expect(Object.keys(json(bad).errors as Record<string, string[]>)).toEqual(['id']);

    const text = await app.inject({ method: 'GET', url: '/items/seven' });
    expect(text.statusCode).toBe(422);
    expect(Object.keys(json(text).errors as Record<string, string[]>)).toEqual(['id']);
  });
});

describe('malformed requests', () => {
  it('answers 400 bad_request for malformed JSON', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/logs',
      headers: { 'content-type': 'application/json' },
      payload: '{"source": "api", "logs": [',
    });
    expect(res.statusCode).toBe(400);
    const body = json(res);
    expect(body.error).toBe('bad_request');
    expect(body.message).toMatch(/JSON/);
    expect(body).not.toHaveProperty('errors');
  });

  it('answers 400 bad_request for an empty body declared as JSON', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/logs',
      headers: { 'content-type': 'application/json' },
      payload: '',
    });
    expect(res.statusCode).toBe(400);
    expect(json(res).error).toBe('bad_request');
  });

  it('answers 400 bad_request for an unsupported content type', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/logs',
      headers: { 'content-type': 'application/xml' },
      payload: '<logs/>',
    });
    expect(res.statusCode).toBe(400);
    const body = json(res);
    expect(body.error).toBe('bad_request');
    expect(body.message).toMatch(/content type/i);
  });

  it('answers 400 bad_request for a text/plain body (what fetch sends by default)', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/logs',
      headers: { 'content-type': 'text/plain;charset=UTF-8' },
      payload: JSON.stringify({ source: 'api', logs: [{ level: 'info', message: 'x' }] }),
    });
    expect(res.statusCode).toBe(400);
    expect(json(res).error).toBe('bad_request');
  });

  it('answers 413 payload_too_large for a body over the limit', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/logs',
      payload: { source: 'api', logs: [{ level: 'info', message: 'x'.repeat(4096) }] },
    });
    expect(res.statusCode).toBe(413);
    expect(json(res)).toEqual({ error: 'payload_too_large', message: expect.any(String) });
  });

  it('accepts a body just under the limit', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/logs',
      payload: { source: 'api', logs: [{ level: 'info', message: 'x'.repeat(1500) }] },
    });
    expect(res.statusCode).toBe(201);
  });
});

describe('error envelope', () => {
  it('answers 404 route_not_found for an unknown route, without the query string', async () => {
    const res = await app.inject({ method: 'GET', url: '/nope/nothing?token=abc' });
    expect(res.statusCode).toBe(404);
    const body = json(res);
    expect(body.error).toBe('route_not_found');
    expect(body.message).toBe('Route GET /nope/nothing not found');
    expect(res.headers['x-request-id']).toEqual(expect.any(String));
  });

  it('answers 404 route_not_found for a known path with the wrong method', async () => {
    const res = await app.inject({ method: 'DELETE', url: '/logs' });
    expect(res.statusCode).toBe(404);
    expect(json(res).error).toBe('route_not_found');
  });

  it('tells not_found (a resource) from route_not_found', async () => {
    const res = await app.inject({ method: 'GET', url: '/missing' });
    expect(res.statusCode).toBe(404);
    expect(json(res)).toEqual({ error: 'not_found', message: 'Vehicle not found' });
  });

  it('answers an AppError with its status and code', async () => {
    const res = await app.inject({ method: 'POST', url: '/items' });
    expect(res.statusCode).toBe(409);
    expect(json(res)).toEqual({ error: 'conflict', message: 'An item with this name already exists' });
  });

  it('answers 500 internal_error with a request id and nothing internal for a plain Error', async () => {
    const res = await app.inject({ method: 'GET', url: '/boom', headers: { 'x-request-id': 'trace-500' } });
    expect(res.statusCode).toBe(500);
    const body = json(res);
    expect(body).toEqual({ error: 'internal_error', message: 'An unexpected error occurred', request_id: 'trace-500' });
    expect(res.body).not.toMatch(/ECONNREFUSED|password|select|stack|at /i);
  });

  it('maps an error carrying a 4xx statusCode onto the matching code', async () => {
    const res = await app.inject({ method: 'GET', url: '/forbidden-ish' });
    expect(res.statusCode).toBe(403);
    expect(json(res)).toEqual({ error: 'forbidden', message: 'Only owners may do that' });
  });

  it('answers 500 when a response breaks its schema, without leaking the data', async () => {
    const res = await app.inject({ method: 'GET', url: '/wrong-shape' });
    expect(res.statusCode).toBe(500);
    const body = json(res);
    expect(body.error).toBe('internal_error');
    expect(body.request_id).toEqual(expect.any(String));
    expect(res.body).not.toContain('not-a-number');
    expect(res.body).not.toContain('secret');
  });
});

describe('request ids', () => {
  it('echoes a supplied x-request-id', async () => {
    const res = await app.inject({ method: 'GET', url: '/health', headers: { 'x-request-id': 'abc-123.def:9_x' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-request-id']).toBe('abc-123.def:9_x');
  });

  it('generates a UUID when none is supplied, a new one per request', async () => {
    const first = await app.inject({ method: 'GET', url: '/health' });
    const second = await app.inject({ method: 'GET', url: '/health' });
    expect(first.headers['x-request-id']).toMatch(UUID);
    expect(second.headers['x-request-id']).toMatch(UUID);
    expect(second.headers['x-request-id']).not.toBe(first.headers['x-request-id']);
  });

  it('replaces a supplied id that is unsafe or too long', async () => {
    for (const bad of ['has spaces in it', 'a'.repeat(129), 'semi;colon', '<script>']) {
      const res = await app.inject({ method: 'GET', url: '/health', headers: { 'x-request-id': bad } });
      expect(res.headers['x-request-id']).toMatch(UUID);
    }
  });

  it('carries the id on error responses too', async () => {
    const res = await app.inject({ method: 'POST', url: '/items', headers: { 'x-request-id': 'req-409' } });
    expect(res.statusCode).toBe(409);
    expect(res.headers['x-request-id']).toBe('req-409');
  });
});

describe('HEAD', () => {
  it('answers HEAD on a GET route with the headers and no body', async () => {
    const get = await app.inject({ method: 'GET', url: '/items/5' });
    const head = await app.inject({ method: 'HEAD', url: '/items/5' });
    expect(head.statusCode).toBe(200);
    expect(head.body).toBe('');
    expect(head.headers['content-type']).toBe(get.headers['content-type']);
    expect(head.headers['content-length']).toBe(get.headers['content-length']);
  });

  it('validates a HEAD request like its GET', async () => {
    const head = await app.inject({ method: 'HEAD', url: '/items/zero' });
    expect(head.statusCode).toBe(422);
    expect(head.body).toBe('');
  });
});

describe('logging', () => {
  it('logs an unexpected error with the request id the response names', async () => {
    const lines: Record<string, unknown>[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        callback();
      },
    });
    const logged = createServer({ logLevel: 'error', logger: { level: 'error', stream } });
    logged.get('/boom', async () => {
      throw new Error('the database is on fire');
    });
    try {
      const res = await logged.inject({ method: 'GET', url: '/boom' });
      expect(res.statusCode).toBe(500);
      const requestId = json(res).request_id;
      expect(requestId).toEqual(expect.any(String));
      // Whatever its label, the request id is a field of the error's log line.
      const line = lines.find((l) => Object.values(l).includes(requestId));
      expect(line).toBeDefined();
      expect(line!.level).toBe(50);
      expect(JSON.stringify(line)).toContain('the database is on fire');
    } finally {
      await logged.close();
    }
  });
});

describe('redactUrl', () => {
  it('hides the values of credential-like query parameters and keeps the rest', () => {
    expect(redactUrl('/api/v1/auth/verify-email?token=abc123')).toBe('/api/v1/auth/verify-email?token=[REDACTED]');
    expect(redactUrl('/x?otp=123456&page=2&reset_token=t&api_key=k')).toBe('/x?otp=[REDACTED]&page=2&reset_token=[REDACTED]&api_key=[REDACTED]');
    expect(redactUrl('/tail?level=error&access%5Ftoken=jwt&q=a%20b')).toBe('/tail?level=error&access%5Ftoken=[REDACTED]&q=a%20b');
    expect(redactUrl('/tail?ticket=ltt_abc&level=error')).toBe('/tail?ticket=[REDACTED]&level=error');
    expect(redactUrl('/api/logs?level=error&page=3')).toBe('/api/logs?level=error&page=3');
    expect(redactUrl('/health')).toBe('/health');
  });

  it('is what the request log line carries', async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(chunk.toString('utf8'));
        callback();
      },
    });
    const app = createServer({ logLevel: 'info', logger: { level: 'info', stream } });
    app.get('/link', async () => ({ ok: true }));
    await app.inject({ method: 'GET', url: '/link?token=very-secret-link-token' });
    await app.close();
    expect(lines.join('')).toContain('/link?token=[REDACTED]');
    expect(lines.join('')).not.toContain('very-secret-link-token');
  });

  it('removes the credential headers from a log line that carries the request’s headers', async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(chunk.toString('utf8'));
        callback();
      },
    });
    // A serializer of the caller's own that logs every header: the redaction still applies.
    const logger = { level: 'info', stream, serializers: { req: (request: { headers: unknown }) => ({ headers: request.headers }) } };
    const app = createServer({ logLevel: 'info', logger });
    app.get('/headers', async () => ({ ok: true }));
    await app.inject({
      method: 'GET',
      url: '/headers',
      headers: { authorization: 'Bearer secret-jwt', cookie: 'sid=secret-cookie', 'x-ingest-key': 'ltk_secret-key', 'x-trace': 'kept' },
    });
    await app.close();
    const headers = lines.map((line) => (JSON.parse(line) as { req?: { headers?: Record<string, string> } }).req?.headers).find(Boolean);
    expect(headers).toMatchObject({ 'x-trace': 'kept' });
    for (const name of REDACTED_HEADERS) expect(headers).not.toHaveProperty(name);
    expect(lines.join('')).not.toMatch(/secret-(jwt|cookie|key)/);
  });
});

describe('closing', () => {
  it('ends the keep-alive connection of a request in flight once answered, so that close does not wait on the client', async () => {
    const app = createServer({ logLevel: 'silent' });
    let started!: () => void;
    const inFlight = new Promise<void>((resolve) => (started = resolve));
    let closedDatabase = false;
    app.get('/slow', async () => {
      started();
      await new Promise((resolve) => setTimeout(resolve, 300));
      return { database: closedDatabase ? 'closed' : 'open' };
    });
    // What an app closes last (its database): only after the request in flight was answered.
    app.addHook('onClose', async () => void (closedDatabase = true));
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    // A client that keeps its connections open between requests, as load balancers and the apps' HTTP stacks do.
    const agent = new Agent({ keepAlive: true });
    try {
      const answer = new Promise<{ response: IncomingMessage; body: string }>((resolve, reject) => {
        get({ host: '127.0.0.1', port, path: '/slow', agent }, (response) => {
          let body = '';
          response.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
          response.on('end', () => resolve({ response, body }));
        }).on('error', reject);
      });
      await inFlight;
      const startedClosing = Date.now();
      const closed = app.close();
      const { response, body } = await answer;
      expect(response.statusCode).toBe(200);
      expect(JSON.parse(body)).toEqual({ database: 'open' });
      expect(response.headers.connection).toBe('close');
      // Without it, close() waits for the client to drop its idle connection (here: never).
      await closed;
      expect(Date.now() - startedClosing).toBeLessThan(2_000);
      expect(closedDatabase).toBe(true);
    } finally {
      agent.destroy();
    }
  });

  /** A listening app whose `/slow` holds its request until `release`; what ran, in order, in `order`. */
  const slowApp = async (drainMs?: number) => {
    const app = createServer({ logLevel: 'silent', drainMs });
    const order: string[] = [];
    let started!: () => void;
    const inFlight = new Promise<void>((resolve) => (started = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    app.get('/slow', async () => {
      started();
      await released;
      order.push('handler');
      return { ok: true };
    });
    app.addHook('onClose', async () => void order.push('database'));
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    // A client that leaves before its answer: its connection is gone, the handler still runs.
    const request = get({ host: '127.0.0.1', port, path: '/slow' });
    request.on('error', () => {});
    await inFlight;
    request.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
    return { app, order, release };
  };

  it('waits for a handler whose client left before closing what the app closes last', async () => {
    const { app, order, release } = await slowApp();
    const closed = app.close();
    await new Promise((resolve) => setTimeout(resolve, 100));
    // The database is still open while the handler runs.
    expect(order).toEqual([]);
    release();
    await closed;
    expect(order).toEqual(['handler', 'database']);
  });

  it('waits no longer than drainMs', async () => {
    const { app, order, release } = await slowApp(200);
    const startedClosing = Date.now();
    await app.close();
    expect(Date.now() - startedClosing).toBeGreaterThanOrEqual(190);
    expect(Date.now() - startedClosing).toBeLessThan(2_000);
    expect(order).toEqual(['database']);
    release();
  });

  it('forgets a streamed answer its client cut short, and one it read to the end', async () => {
    const app = createServer({ logLevel: 'silent' });
    let chunks = 0;
    app.get('/export', (_request, reply) => {
      const body = new Readable({
        read() {
          setTimeout(() => this.push(chunks++ < 200 ? 'x'.repeat(64 * 1024) : null), 5);
        },
      });
      return reply.type('text/csv').send(body);
    });
    app.get('/quick', async () => ({ ok: true }));
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    const agent = new Agent({ keepAlive: true });
    try {
      await new Promise<void>((resolve, reject) => {
        get({ host: '127.0.0.1', port, path: '/quick', agent }, (response) => response.resume().on('end', resolve)).on('error', reject);
      });
      // A client that leaves after the first bytes of a long export: Fastify's onResponse never comes.
      await new Promise<void>((resolve) => {
        const request = get({ host: '127.0.0.1', port, path: '/export' }, (response) => response.once('data', () => request.destroy()));
        request.on('close', () => resolve()).on('error', () => {});
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(chunks).toBeLessThan(200);
      const startedClosing = Date.now();
      await app.close();
      // Neither is waited for (the drain would hold the close 8 s).
      expect(Date.now() - startedClosing).toBeLessThan(1_000);
    } finally {
      agent.destroy();
    }
  });

  it('closes at once when nothing is in flight', async () => {
    const app = createServer({ logLevel: 'silent' });
    app.get('/quick', async () => ({ ok: true }));
    await app.listen({ host: '127.0.0.1', port: 0 });
    expect((await app.inject({ method: 'GET', url: '/quick' })).statusCode).toBe(200);
    const startedClosing = Date.now();
    await app.close();
    expect(Date.now() - startedClosing).toBeLessThan(500);
  });
});
