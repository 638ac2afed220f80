import { Writable } from 'node:stream';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logs, projects } from '../src/db/schema/index.js';
import { buildTestApp, createProject, createUser, expectError, type TestApp, type TestUser } from './helpers.js';

let t: TestApp;
let owner: TestUser;
let projectId: number;
const logLines: string[] = [];

beforeAll(async () => {
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString());
      done();
    },
  });
  t = await buildTestApp({}, { logger: { level: 'info', stream } });
  owner = await createUser(t);
  projectId = (await createProject(t, owner)).id;
});
afterAll(() => t.close());

const post = (url: string, payload: string, headers: Record<string, string> = owner.headers) =>
  t.app.inject({ method: 'POST', url: `/api${url}`, headers: { ...headers, 'content-type': 'application/json' }, payload });

const storedCount = async () => (await t.database.db.select().from(logs).where(eq(logs.projectId, projectId))).length;

/** Strings PostgreSQL cannot store, as a JSON client would escape them. */
const UNSTORABLE = [
  ['a NUL character', 'a\\u0000b'],
  ['a lone high surrogate', 'x\\ud800y'],
  ['a lone low surrogate', 'x\\udfffy'],
] as const;

describe('text PostgreSQL cannot store answers 422 naming the field, never 500', () => {
  it.each(UNSTORABLE)('in a single log (%s) — message, source, context value and key', async (_case, bad) => {
    for (const [body, field] of [
      [`{"level":"info","message":"${bad}"}`, 'message'],
      [`{"level":"info","message":"ok","source":"${bad}"}`, 'source'],
      [`{"level":"info","message":"ok","context":{"user":{"name":"${bad}"}}}`, 'context.user.name'],
    ] as const) {
      const res = expectError(await post(`/projects/${projectId}/logs`, body), 422, 'validation_error');
      expect(Object.keys(res.errors ?? {}), body).toEqual([field]);
    }
    const key = await post(`/projects/${projectId}/logs`, `{"level":"info","message":"ok","context":{"${bad}":1}}`);
    expectError(key, 422, 'validation_error');
    expect(await storedCount()).toBe(0);
  });

  it.each(UNSTORABLE)('in a batch (%s): nothing is stored and the entry is named', async (_case, bad) => {
    const entries = Array.from({ length: 50 }, (_, i) => `{"level":"info","message":"entry ${i}"}`);
    entries[37] = `{"level":"info","message":"entry","context":{"trace":["ok","${bad}"]}}`;
    const res = expectError(await post(`/projects/${projectId}/logs/batch`, `{"logs":[${entries.join(',')}]}`), 422, 'validation_error');
    expect(Object.keys(res.errors ?? {})).toEqual(['logs.37.context.trace.1']);
    expect(await storedCount()).toBe(0);
  });

  it('stores paired surrogates (an emoji escaped in JSON) as the character', async () => {
    const res = await post(`/projects/${projectId}/logs`, '{"level":"info","message":"deploy \\ud83d\\ude80 done"}');
    expect(res.statusCode).toBe(201);
    expect(res.json().data.message).toBe('deploy 🚀 done');
    await t.database.db.delete(logs).where(eq(logs.projectId, projectId));
  });

  it.each(UNSTORABLE)("in a project's name or description, or an ingest key's name (%s)", async (_case, bad) => {
    const before = (await t.database.db.select().from(projects)).length;
    expectError(await post('/projects', `{"name":"${bad}"}`), 422, 'validation_error');
    expectError(await post('/projects', `{"name":"fine","description":"${bad}"}`), 422, 'validation_error');
    expect((await t.database.db.select().from(projects)).length).toBe(before);
    const update = await t.app.inject({
      method: 'PUT',
      url: `/api/projects/${projectId}`,
      headers: { ...owner.headers, 'content-type': 'application/json' },
      payload: `{"name":"${bad}"}`,
    });
    expectError(update, 422, 'validation_error');
    expectError(await post(`/projects/${projectId}/ingest-keys`, `{"name":"${bad}"}`), 422, 'validation_error');
  });

  it('answers 422 for a NUL in a search query', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/api/projects/${projectId}/logs?search=a%00b`, headers: owner.headers });
    expectError(res, 422, 'validation_error');
  });
});

describe('limits', () => {
  it('answers a 270 KB invalid batch with at most 100 fields and the count of all', async () => {
    const entries = Array.from({ length: 10_000 }, () => '{"level":"loud","message":"x"}');
    const body = `{"logs":[${entries.join(',')}]}`;
    const res = await post(`/projects/${projectId}/logs/batch`, body);
    const error = expectError(res, 422, 'validation_error') as { errors: Record<string, string[]>; error_count?: number };
    expect(Object.keys(error.errors)).toHaveLength(100);
    expect(error.error_count).toBe(10_000);
    expect(res.body.length).toBeLessThan(20_000);
  });

  it('answers a path parameter over 100 characters with 414 in the envelope', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/api/projects/${'9'.repeat(150)}`, headers: owner.headers });
    expectError(res, 414, 'uri_too_long');
  });

  it('answers 413 from Content-Length alone for a batch over the limit', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: `/api/projects/${projectId}/logs/batch`,
      headers: { ...owner.headers, 'content-type': 'application/json', 'content-length': String(t.config.logs.batchMaxBytes + 1) },
      payload: Buffer.alloc(t.config.logs.batchMaxBytes + 1, 0x20),
    });
    expectError(res, 413, 'payload_too_large');
  });
});

describe('the log of a failed statement', () => {
  it('names the statement and its error code, never its parameters or the rows it quoted', async () => {
    // A real failure from the database (PostgreSQL refuses NUL in text), logged by the app's logger.
    const failure = await t.database.db
      .insert(logs)
      .values({ projectId, level: 'info', message: 'secret-body-text\u0000', timestamp: new Date(), receivedAt: new Date() })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(failure).toBeInstanceOf(Error);
    logLines.length = 0;
    t.app.log.error({ err: failure }, 'batch failed');
    const line = logLines.join('');
    expect(line).toContain('batch failed');
    expect(line).not.toContain('secret-body-text');
    const entry = JSON.parse(logLines[0] ?? '{}') as { err: { message: string; statement: string } };
    expect(entry.err.message).toBe('Failed query');
    expect(entry.err.statement).toMatch(/^insert into "logtracker"\."logs" .* #[0-9a-f]{10}$/);
  });
});
