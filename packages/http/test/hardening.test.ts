import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppInstance } from '../src/index.js';
import { statementName } from '../src/log-errors.js';
import { buildApp, json } from './helpers.js';

const LIMIT = 64 * 1024;

/** Sends raw bytes on a new connection; resolves with everything the server answered. */
function exchange(
  port: number,
  head: string,
  body: { bytes: number; chunk?: number } | undefined,
  options: { waitForContinue?: boolean } = {},
): Promise<{ text: string; error?: string }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    let error: string | undefined;
    socket.on('data', (data) => {
      text += data.toString('latin1');
      if (options.waitForContinue && text.startsWith('HTTP/1.1 100') && body) sendBody();
    });
    socket.on('error', (e: NodeJS.ErrnoException) => (error = e.code));
    socket.on('close', () => resolve({ text, error }));
    const sendBody = () => {
      if (!body) return;
      const chunk = Buffer.alloc(body.chunk ?? 64 * 1024, 0x61);
      let sent = 0;
      const pump = () => {
        while (sent < body.bytes && !socket.destroyed) {
          sent += chunk.length;
          if (!socket.write(chunk)) return void socket.once('drain', pump);
        }
        if (!socket.destroyed) socket.end();
      };
      pump();
    };
    socket.write(head);
    if (!options.waitForContinue) sendBody();
    else if (!body) socket.end();
    // A server that never answers fails the test by its timeout, not by hanging here forever.
    setTimeout(() => socket.destroy(), 15_000).unref();
  });
}

describe('bodies over the limit, and Expect: 100-continue', () => {
  let app: AppInstance;
  let port: number;

  beforeAll(async () => {
    app = await buildApp({ bodyLimit: LIMIT });
    app.post('/echo', { schema: { body: z.object({ value: z.string() }) } }, async (request) => ({ data: request.body }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as { port: number }).port;
  });
  afterAll(() => app.close());

  const head = (length: number, extra = '') =>
    `POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${extra}\r\n`;

  it('answers 413 from Content-Length and lets a client still sending read it (6 MiB, 10 runs)', async () => {
    for (let run = 0; run < 10; run++) {
      const bytes = 6 * 1024 * 1024;
      const { text, error } = await exchange(port, head(bytes), { bytes });
      expect(error, `run ${run}`).toBeUndefined();
      expect(text.split('\r\n')[0]).toBe('HTTP/1.1 413 Payload Too Large');
      expect(text.toLowerCase()).toContain('connection: close');
      expect(text).toContain('"error":"payload_too_large"');
    }
  });

  it('answers 413 instead of 100 Continue when the declared body is over the limit', async () => {
    const { text, error } = await exchange(port, head(10 * LIMIT, 'Expect: 100-continue\r\n'), { bytes: 10 * LIMIT }, { waitForContinue: true });
    expect(error).toBeUndefined();
    expect(text.startsWith('HTTP/1.1 413')).toBe(true);
    expect(text).not.toContain('100 Continue');
  });

  it('answers 100 Continue, then the route, for an acceptable body', async () => {
    const body = JSON.stringify({ value: 'hello' });
    const result = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      socket.on('data', (data) => {
        text += data.toString();
        if (text.startsWith('HTTP/1.1 100 Continue\r\n\r\n') && !text.includes('200')) socket.write(body);
        if (text.includes('"hello"')) socket.end();
      });
      socket.on('close', () => resolve(text));
      socket.write(head(Buffer.byteLength(body), 'Expect: 100-continue\r\n'));
    });
    expect(result.startsWith('HTTP/1.1 100 Continue')).toBe(true);
    expect(result).toContain('HTTP/1.1 200 OK');
    expect(result).toContain('"value":"hello"');
  });

  it('refuses through inject as well, naming the limit', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/echo',
      headers: { 'content-type': 'application/json', 'content-length': String(LIMIT + 1) },
      payload: 'x'.repeat(LIMIT + 1),
    });
    expect(response.statusCode).toBe(413);
    expect(json(response)).toMatchObject({ error: 'payload_too_large' });
  });
});

describe('statuses in the envelope', () => {
  let app: AppInstance;

  beforeAll(async () => {
    app = await buildApp();
    app.get('/items/:id', { schema: { params: z.object({ id: z.string() }) } }, async (request) => ({ data: request.params }));
    app.get('/teapot', async () => {
      throw Object.assign(new Error('I am a teapot'), { statusCode: 418 });
    });
    app.get('/gone', async () => {
      throw Object.assign(new Error('Gone for good'), { statusCode: 410 });
    });
    app.get('/method', async () => {
      throw Object.assign(new Error('Use POST'), { statusCode: 405 });
    });
    await app.ready();
  });
  afterAll(() => app.close());

  it('answers a path parameter over 100 characters with 414 in the envelope', async () => {
    const response = await app.inject({ method: 'GET', url: `/items/${'a'.repeat(101)}` });
    expect(response.statusCode).toBe(414);
    expect(json(response)).toEqual({ error: 'uri_too_long', message: 'A path parameter is too long' });
    expect(response.headers['x-request-id']).toBeDefined();
  });

  it('keeps every 4xx status with its own code', async () => {
    const method = await app.inject({ method: 'GET', url: '/method' });
    expect(method.statusCode).toBe(405);
    expect(json(method).error).toBe('method_not_allowed');
    const gone = await app.inject({ method: 'GET', url: '/gone' });
    expect(gone.statusCode).toBe(410);
    expect(json(gone).error).toBe('gone');
    const teapot = await app.inject({ method: 'GET', url: '/teapot' });
    expect(teapot.statusCode).toBe(418);
    expect(json(teapot)).toEqual({ error: 'i_m_a_teapot', message: 'I am a teapot' });
  });
});

describe('OPTIONS', () => {
  it('answers a request that is not a preflight 404 in the envelope, and a preflight as CORS says', async () => {
    const app = await buildApp();
    app.get('/things', async () => ({ data: [] }));
    await app.ready();
    const plain = await app.inject({ method: 'OPTIONS', url: '/things' });
    expect(plain.statusCode).toBe(404);
    expect(json(plain)).toEqual({ error: 'route_not_found', message: 'Route OPTIONS /things not found' });
    const preflight = await app.inject({
      method: 'OPTIONS',
      url: '/things',
      headers: { origin: 'http://localhost:3000', 'access-control-request-method': 'GET' },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('http://localhost:3000');
    await app.close();
  });
});

describe('text PostgreSQL cannot store', () => {
  let app: AppInstance;

  beforeAll(async () => {
    app = await buildApp();
    app.post('/notes', { schema: { body: z.object({ title: z.string(), tags: z.array(z.string()).optional() }) } }, async (request) => ({
      data: request.body,
    }));
    app.get('/search', { schema: { querystring: z.object({ q: z.string() }) } }, async (request) => ({ data: request.query }));
    app.post('/own', { config: { checksOwnText: true } }, async () => ({ data: 'checked by the route' }));
    await app.ready();
  });
  afterAll(() => app.close());

  it.each([
    ['a NUL character', '{"title":"a\\u0000b"}', 'title'],
    ['a lone high surrogate', '{"title":"x\\ud800y"}', 'title'],
    ['a lone low surrogate in an array', '{"title":"ok","tags":["fine","\\udc00"]}', 'tags.1'],
  ])('answers 422 naming the field for %s in a body', async (_case, payload, field) => {
    const response = await app.inject({ method: 'POST', url: '/notes', headers: { 'content-type': 'application/json' }, payload });
    expect(response.statusCode).toBe(422);
    expect(json(response)).toMatchObject({ error: 'validation_error', errors: { [field]: [expect.stringContaining('NUL')] } });
  });

  it('accepts paired surrogates (an emoji escaped in JSON)', async () => {
    const response = await app.inject({ method: 'POST', url: '/notes', headers: { 'content-type': 'application/json' }, payload: '{"title":"\\ud83d\\ude00"}' });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ data: { title: '😀' } });
  });

  it('answers 422 for a NUL in a query string', async () => {
    const response = await app.inject({ method: 'GET', url: '/search?q=a%00b' });
    expect(response.statusCode).toBe(422);
    expect(json(response).errors).toEqual({ q: [expect.any(String)] });
  });

  it('ignores a query parameter the route does not take', async () => {
    const response = await app.inject({ method: 'GET', url: '/search?q=fine&other=a%00b' });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ data: { q: 'fine' } });
  });

  it('leaves a route that checks its own text alone', async () => {
    const response = await app.inject({ method: 'POST', url: '/own', headers: { 'content-type': 'application/json' }, payload: '{"a":"\\u0000"}' });
    expect(response.statusCode).toBe(200);
  });
});

describe('response headers and docs', () => {
  it('sends nosniff everywhere and no-store unless the route caches', async () => {
    const app = await buildApp();
    app.get('/plain', async () => ({ data: 1 }));
    app.get('/cached', async (_request, reply) => reply.header('cache-control', 'public, max-age=60').send({ data: 1 }));
    await app.ready();
    for (const url of ['/plain', '/missing']) {
      const response = await app.inject({ method: 'GET', url });
      expect(response.headers['x-content-type-options']).toBe('nosniff');
      expect(response.headers['cache-control']).toBe('no-store');
    }
    const cached = await app.inject({ method: 'GET', url: '/cached' });
    expect(cached.headers['cache-control']).toBe('public, max-age=60');
    const docs = await app.inject({ method: 'GET', url: '/docs' });
    expect(docs.statusCode).toBe(200);
    expect(docs.headers['content-security-policy']).toContain("default-src 'self'");
    expect(docs.headers['content-security-policy']).not.toContain('upgrade-insecure-requests');
    await app.close();
  });

  it('serves no docs when they are switched off', async () => {
    const app = await buildApp({ docsEnabled: false });
    await app.ready();
    expect((await app.inject({ method: 'GET', url: '/docs' })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/docs/json' })).statusCode).toBe(404);
    await app.close();
  });
});

describe('errors in the log', () => {
  it('logs the failed statement by name, never its parameters or the rows it quoted', async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const app = await buildApp({ logger: { level: 'error', stream } });
    const sql = 'insert into "logs" ("project_id", "message") values ($1, $2), ($3, $4)';
    app.get('/fail', async () => {
      const server = Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), {
        code: '22021',
        detail: 'Key (message)=(secret body) already exists.',
        where: 'JSON data, line 1: secret-body',
      });
      throw Object.assign(new Error(`Failed query: ${sql}\nparams: 7,secret-body,7,other-secret`), {
        query: sql,
        params: [7, 'secret-body', 7, 'other-secret'],
        cause: server,
      });
    });
    await app.ready();
    const response = await app.inject({ method: 'GET', url: '/fail' });
    expect(response.statusCode).toBe(500);
    const logged = lines.join('');
    expect(logged).not.toContain('secret');
    const entry = JSON.parse(lines.find((line) => line.includes('unhandled error')) ?? '{}') as { err: Record<string, unknown> };
    expect(entry.err).toMatchObject({ message: 'Failed query', statement: statementName(sql), cause: { code: '22021' } });
    await app.close();
  });

});
