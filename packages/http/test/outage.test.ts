import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError, serializeError, type AppInstance } from '../src/index.js';
import { buildApp, json } from './helpers.js';

const SECRET = 'batch-entry-4411';

/** A driver error as postgres.js raises it on a lost connection: a code, and what was sent. */
function driverError(code: string): Error {
  return Object.assign(new Error(`write ${code} 127.0.0.1:5432`), {
    code,
    query: `insert into logs (message) values ($1)`,
    parameters: [SECRET],
    args: [SECRET],
    types: [25],
  });
}

/** The query builder's wrapper, which words the failure with the statement and every parameter. */
function builderError(cause: unknown): Error {
  return Object.assign(new Error(`Failed query: insert into logs (message) values ($1)\nparams: ${SECRET}`, { cause }), {
    query: 'insert into logs (message) values ($1)',
    params: [SECRET],
  });
}

/** An error that declares the 503 it means, as @repo/db's DatabaseUnavailableError does. */
class Unavailable extends Error {
  readonly statusCode = 503;
  readonly retryAfter = 2;
  constructor(cause: unknown) {
    super('database unavailable (ECONNRESET)', { cause });
  }
}

let app: AppInstance;
const lines: string[] = [];

beforeAll(async () => {
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  app = await buildApp({ logger: { level: 'info', stream } });
  app.get('/outage', async () => {
    throw builderError(new Unavailable(driverError('ECONNRESET')));
  });
  app.get('/outage-in-app-error', async () => {
    throw new AppError('internal_error', 'Could not store the batch', { cause: new Unavailable(driverError('EPIPE')) });
  });
  app.get('/not-configured', async () => {
    throw new AppError('service_unavailable', 'Sign-in is not configured');
  });
  app.get('/bug', async () => {
    throw builderError(driverError('42P01'));
  });
  await app.ready();
});

afterAll(async () => {
  await app.close();
});

describe('an outage answered 503', () => {
  it('answers 503 service_unavailable with Retry-After for an error caused by an unreachable dependency', async () => {
    const res = await app.inject({ method: 'GET', url: '/outage' });
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('2');
    const body = json(res);
    expect(body).toMatchObject({ error: 'service_unavailable', request_id: expect.any(String) });
    expect(String(body.message)).not.toContain('ECONNRESET');
  });

  it('answers 503 for an AppError 500 an outage caused, and keeps an AppError 503 as raised', async () => {
    const caused = await app.inject({ method: 'GET', url: '/outage-in-app-error' });
    expect(caused.statusCode).toBe(503);
    expect(caused.headers['retry-after']).toBe('2');
    const raised = await app.inject({ method: 'GET', url: '/not-configured' });
    expect(raised.statusCode).toBe(503);
    expect(json(raised)).toMatchObject({ error: 'service_unavailable', message: 'Sign-in is not configured' });
  });

  it('still answers 500 for a statement that failed on its own', async () => {
    const res = await app.inject({ method: 'GET', url: '/bug' });
    expect(res.statusCode).toBe(500);
    expect(res.headers['retry-after']).toBeUndefined();
    expect(json(res).error).toBe('internal_error');
  });

  it('logged each failure with its codes and without the parameters it carried', () => {
    const logged = lines.join('');
    expect(logged).toContain('"statusCode":503');
    expect(logged).toContain('ECONNRESET');
    expect(logged).toContain('42P01');
    expect(logged).toContain('insert into logs');
    expect(logged).not.toContain(SECRET);
    const warnings = lines.filter((line) => line.includes('"level":40'));
    expect(warnings.length).toBeGreaterThanOrEqual(2);
  });
});

describe('serializeError', () => {
  it('keeps the type, code and statement name of every error of the chain, never its parameters', () => {
    const out = serializeError(builderError(new Unavailable(driverError('57P01')))) as Record<string, unknown>;
    const text = JSON.stringify(out);
    expect(text).not.toContain(SECRET);
    expect(out.message).toBe('Failed query');
    expect(out.statement).toMatch(/^insert into logs \(message\) values \(\$1\) #[0-9a-f]{10}$/);
    const cause = out.cause as Record<string, unknown>;
    expect(cause).toMatchObject({ statusCode: 503, message: 'database unavailable (ECONNRESET)' });
    expect(cause.cause).toMatchObject({ code: '57P01', statement: expect.stringContaining('insert into logs') });
    for (const key of ['query', 'params', 'parameters', 'args', 'types']) {
      expect(out).not.toHaveProperty(key);
      expect(cause.cause).not.toHaveProperty(key);
    }
  });
});
