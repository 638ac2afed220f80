import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createIdempotencyStore, queryRows, sql, withTransaction } from '@repo/db';
import { createTestDatabase, type TestDatabase } from '@repo/db/testing';
import type { FastifyRequest } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AppError, idempotencyPlugin, type AppInstance } from '../src/index.js';
import { buildApp, json } from './helpers.js';

// The mechanics of `Idempotency-Key` (DESIGN.md §10) on a small app over the real store, on
// whichever database createTestDatabase gives (PGlite, or PostgreSQL with TEST_DATABASE_URL).

/** What drizzle-kit generates for `idempotencyKeysTable` (the apps' migrations create it in their schema). */
const DDL = `CREATE TABLE "idempotency_keys" (
\t"id" text PRIMARY KEY NOT NULL,
\t"fingerprint" text NOT NULL,
\t"owner" text NOT NULL,
\t"claimed_at" timestamp with time zone NOT NULL,
\t"expires_at" timestamp with time zone NOT NULL,
\t"status" integer,
\t"content_type" text,
\t"location" text,
\t"body" text,
\t"commits" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX "idempotency_keys_expires_at" ON "idempotency_keys" USING btree ("expires_at");`;

function migrations(): string {
  const folder = mkdtempSync(join(tmpdir(), 'idempotency-migrations-'));
  mkdirSync(join(folder, 'meta'));
  const entries = [{ idx: 0, version: '7', when: 1_700_000_000_000, tag: '0000_idempotency_keys', breakpoints: true }];
  writeFileSync(join(folder, 'meta', '_journal.json'), JSON.stringify({ version: '7', dialect: 'postgresql', entries }));
  writeFileSync(join(folder, '0000_idempotency_keys.sql'), DDL);
  return folder;
}

let handle: TestDatabase<Record<string, never>>;
let app: AppInstance;
/** How many times each route's work ran. */
let work = 0;
/** What the `answered, then more work` request left running after its answer. */
let background: Promise<unknown> | undefined;
/** Holds the `slow` requests' work until released. */
let gate: { promise: Promise<void>; open: () => void };

function newGate() {
  let open = () => {};
  const promise = new Promise<void>((resolve) => (open = resolve));
  gate = { promise, open };
}

/** The test's authentication: `x-user` names the caller; none answers 401. */
async function authenticate(request: FastifyRequest) {
  if (typeof request.headers['x-user'] !== 'string') throw new AppError('unauthenticated', 'A user is required');
}

const Thing = z.object({ name: z.string().min(1) });

beforeAll(async () => {
  handle = await createTestDatabase({ schema: {}, migrationsFolder: migrations() });
  app = await buildApp();
  await app.register(idempotencyPlugin, {
    store: createIdempotencyStore(handle.db),
    ttlHours: 24,
    scope: (request) => (typeof request.headers['x-user'] === 'string' ? `user:${request.headers['x-user']}` : undefined),
    purgeIntervalMs: 0,
  });
  app.post(
    '/things',
    { onRequest: authenticate, schema: { operationId: 'createThing', body: Thing, querystring: z.object({ tag: z.string().optional() }) } },
    async (request, reply) => {
      work += 1;
      const { name } = request.body as z.infer<typeof Thing>;
      if (name === 'slow') await gate.promise;
      if (name === 'taken') throw new AppError('conflict', 'The name is taken');
      if (name === 'invalid') throw AppError.validation({ name: ['Not a name we take'] });
      if (name === 'missing') throw AppError.notFound('Shelf');
      if (name === 'broken') throw new Error('boom');
      if (name === 'answered, then more work') {
        // Work the handler leaves running after its answer (an event handled later, a job).
        background = new Promise((resolve) => setTimeout(resolve, 20)).then(() => withTransaction(handle.db, (tx) => tx.execute(sql`select 1`)));
      }
      if (name === 'committed, then broken') {
        await withTransaction(handle.db, (tx) => tx.execute(sql`select 1`));
        throw new Error('boom after the commit');
      }
      return reply.status(201).header('location', `/things/${work}`).send({ data: { id: work, name } });
    },
  );
  app.patch('/things/:id', { onRequest: authenticate, schema: { operationId: 'updateThing', body: Thing } }, async () => {
    work += 1;
    return { data: { id: work } };
  });
  app.post('/public', { schema: { operationId: 'publicThing', security: [], body: Thing } }, async () => {
    work += 1;
    return { data: { id: work } };
  });
  await app.ready();
}, 60_000);

afterAll(async () => {
  await app?.close();
  await handle?.destroy();
});

beforeEach(() => {
  work = 0;
  newGate();
});

const post = (key: string | undefined, body: unknown, options: { user?: string; url?: string; raw?: string } = {}) =>
  app.inject({
    method: 'POST',
    url: options.url ?? '/things',
    headers: {
      'content-type': 'application/json',
      ...(options.user === undefined ? { 'x-user': '1' } : options.user ? { 'x-user': options.user } : {}),
      ...(key === undefined ? {} : { 'idempotency-key': key }),
    },
    payload: options.raw ?? JSON.stringify(body),
  });

const rows = async () => (await queryRows<{ n: number }>(handle.db, sql`select count(*)::int as n from idempotency_keys`))[0]?.n ?? 0;

describe('Idempotency-Key', () => {
  it('answers a retry with the first answer, marked replayed, without doing the work again', async () => {
    const first = await post('k-replay', { name: 'a' });
    expect(first.statusCode).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const again = await post('k-replay', { name: 'a' });
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toBe(first.body);
    expect(again.headers.location).toBe(first.headers.location);
    expect(again.headers['content-type']).toBe(first.headers['content-type']);
    expect(work).toBe(1);
    // Without the header nothing changes: the work runs each time.
    await post(undefined, { name: 'a' });
    await post(undefined, { name: 'a' });
    expect(work).toBe(3);
  });

  it('scopes a key by caller, method and path: another caller or path does its own work', async () => {
    await post('k-scope', { name: 'a' });
    expect((await post('k-scope', { name: 'a' }, { user: '2' })).headers['idempotent-replayed']).toBeUndefined();
    const patch = await app.inject({ method: 'PATCH', url: '/things/1', headers: { 'x-user': '1', 'idempotency-key': 'k-scope' }, payload: { name: 'a' } });
    expect(patch.statusCode).toBe(200);
    expect(work).toBe(3);
  });

  it('refuses the key reused with another body (whitespace included) or query: 422 on idempotency_key, nothing done', async () => {
    await post('k-print', null, { raw: '{"name":"a"}' });
    for (const other of [post('k-print', null, { raw: '{ "name": "a" }' }), post('k-print', null, { raw: '{"name":"a"}', url: '/things?tag=x' })]) {
      const response = await other;
      expect(response.statusCode).toBe(422);
      expect(json(response)).toMatchObject({ error: 'validation_error', errors: { idempotency_key: [expect.stringMatching(/different request/)] } });
    }
    expect(work).toBe(1);
  });

  it('refuses a malformed key with 422 on idempotency_key, before any work', async () => {
    for (const key of ['', 'x'.repeat(256), 'has space', 'é']) {
      const response = await app.inject({ method: 'POST', url: '/things', headers: { 'x-user': '1', 'idempotency-key': key }, payload: { name: 'a' } });
      expect(response.statusCode, JSON.stringify(key)).toBe(422);
      expect(json(response).errors).toHaveProperty('idempotency_key');
    }
    expect((await post('x'.repeat(255), { name: 'a' })).statusCode).toBe(201);
    expect((await post('!~', { name: 'a' })).statusCode).toBe(201);
    expect(work).toBe(2);
  });

  it('remembers a 409 and a 422 the work raised, and replays them', async () => {
    for (const name of ['taken', 'invalid']) {
      const first = await post(`k-${name}`, { name });
      const again = await post(`k-${name}`, { name });
      expect(again.statusCode).toBe(first.statusCode);
      expect(again.body).toBe(first.body);
      expect(again.headers['idempotent-replayed']).toBe('true');
    }
    expect(work).toBe(2);
  });

  it('does not remember a 5xx, a 404, a 401 or a schema 422: the retry does the work', async () => {
    expect((await post('k-500', { name: 'broken' })).statusCode).toBe(500);
    expect((await post('k-500', { name: 'broken' })).statusCode).toBe(500);
    expect((await post('k-404', { name: 'missing' })).statusCode).toBe(404);
    expect((await post('k-404', { name: 'missing' })).statusCode).toBe(404);
    expect(work).toBe(4);
    expect((await post('k-401', { name: 'a' }, { user: '' })).statusCode).toBe(401);
    expect((await post('k-schema', { name: '' })).statusCode).toBe(422);
    expect(work).toBe(4);
    expect((await post('k-401', { name: 'a' })).statusCode).toBe(201);
    const fixed = await post('k-schema', { name: 'a' });
    expect(fixed.statusCode).toBe(201);
    expect(fixed.headers['idempotent-replayed']).toBeUndefined();
    expect(work).toBe(6);
  });

  it('answers 409 with Retry-After while the first is still running, then replays its answer', async () => {
    const first = post('k-slow', { name: 'slow' });
    await expect.poll(() => work).toBe(1);
    const during = await post('k-slow', { name: 'something else' });
    expect(during.statusCode).toBe(409);
    expect(during.headers['retry-after']).toBe('1');
    expect(json(during).error).toBe('conflict');
    gate.open();
    expect((await first).statusCode).toBe(201);
    const after = await post('k-slow', { name: 'slow' });
    expect(after.headers['idempotent-replayed']).toBe('true');
    expect(work).toBe(1);
  });

  it('does the work once among many concurrent requests with one key', async () => {
    const answers = await Promise.all(Array.from({ length: 12 }, () => post('k-storm', { name: 'a' })));
    expect(work).toBe(1);
    const statuses = answers.map((r) => r.statusCode);
    expect(statuses.every((s) => s === 201 || s === 409)).toBe(true);
    expect(answers.filter((r) => r.statusCode === 201 && r.headers['idempotent-replayed'] === undefined)).toHaveLength(1);
  });

  it('lets a claim left running by a crashed instance be taken over once stale', async () => {
    const stuck = post('k-stale', { name: 'slow' });
    await expect.poll(() => work).toBe(1);
    expect((await post('k-stale', { name: 'slow' })).statusCode).toBe(409);
    // As if its instance had died a minute and a half ago, mid-request.
    await handle.db.execute(sql`update idempotency_keys set claimed_at = now() - interval '90 seconds' where status is null`);
    const taking = post('k-stale', { name: 'slow' });
    await expect.poll(() => work).toBe(2);
    gate.open();
    // The first's late answer does not overwrite the claim that took over.
    await stuck;
    const taken = await taking;
    expect(taken.statusCode).toBe(201);
    expect(taken.headers['idempotent-replayed']).toBeUndefined();
    expect(json(await post('k-stale', { name: 'slow' }))).toEqual(json(taken));
    expect(work).toBe(2);
  });

  it('neither releases nor lets a stale takeover redo a claim whose work committed, answered or not', async () => {
    const first = await post('k-committed', { name: 'committed, then broken' });
    expect(first.statusCode).toBe(500);
    const retry = await post('k-committed', { name: 'committed, then broken' });
    expect(retry.statusCode).toBe(409);
    expect(retry.headers['retry-after']).toBe('1');
    expect(json(retry)).toMatchObject({ message: expect.stringContaining('was done') });
    await handle.db.execute(sql`update idempotency_keys set claimed_at = now() - interval '90 seconds' where status is null`);
    expect((await post('k-committed', { name: 'committed, then broken' })).statusCode).toBe(409);
    expect(work).toBe(1);
  });

  it('counts on the claim only the work done before its answer, not what the handler left running after', async () => {
    const first = await post('k-after', { name: 'answered, then more work' });
    expect(first.statusCode).toBe(201);
    await background;
    const [row] = await queryRows<{ commits: number }>(handle.db, sql`select commits from idempotency_keys where status = 201 and body like '%answered, then more work%'`);
    expect(row?.commits).toBe(0);
  });

  it('forgets keys past their time to live: the work runs again, and the purge deletes them', async () => {
    await post('k-old', { name: 'a' });
    await handle.db.execute(sql`update idempotency_keys set expires_at = now() - interval '1 second'`);
    expect((await post('k-old', { name: 'a' })).headers['idempotent-replayed']).toBeUndefined();
    expect(work).toBe(2);
    await handle.db.execute(sql`update idempotency_keys set expires_at = now() - interval '1 second'`);
    await createIdempotencyStore(handle.db).purgeExpired();
    expect(await rows()).toBe(0);
  });

  it('ignores the header on a public route, and lists it in the document only where it is honoured', async () => {
    const before = await rows();
    const first = await post('k-public', { name: 'a' }, { url: '/public', user: '' });
    const again = await post('k-public', { name: 'a' }, { url: '/public', user: '' });
    expect(first.statusCode).toBe(200);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    expect(work).toBe(2);
    expect(await rows()).toBe(before);
    const document = app.swagger() as { paths: Record<string, Record<string, { parameters?: { in: string; name: string; schema: Record<string, unknown> }[] }>> };
    const header = (path: string, method: string) => document.paths[path]?.[method]?.parameters?.find((p) => p.in === 'header' && p.name === 'Idempotency-Key');
    expect(header('/things', 'post')?.schema).toMatchObject({ maxLength: 255, pattern: '^[\\x21-\\x7E]+$' });
    expect(header('/things/{id}', 'patch')).toBeDefined();
    expect(header('/public', 'post')).toBeUndefined();
  });
});

describe('Idempotency-Key while the database is away', () => {
  it('releases a claim it could not release at the time once the database is back: the retry does the work within seconds', async () => {
    const store = createIdempotencyStore(handle.db);
    let away = true;
    let releases = 0;
    const flaky: typeof store = {
      ...store,
      release: async (id, owner) => {
        releases += 1;
        if (away) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
        return store.release(id, owner);
      },
    };
    const other = await buildApp();
    await other.register(idempotencyPlugin, { store: flaky, ttlHours: 24, scope: () => 'user:away', purgeIntervalMs: 0 });
    let runs = 0;
    other.post('/writes', { onRequest: authenticate, schema: { operationId: 'write', body: Thing } }, async (_request, reply) => {
      runs += 1;
      if (away) throw Object.assign(new Error('database unavailable'), { statusCode: 503 });
      return reply.status(201).send({ data: { runs } });
    });
    await other.ready();
    try {
      const send = () =>
        other.inject({ method: 'POST', url: '/writes', headers: { 'content-type': 'application/json', 'x-user': '1', 'idempotency-key': 'k-away' }, payload: { name: 'a' } });
      expect((await send()).statusCode).toBe(503);
      // The claim could not be released: the key counts as still running.
      expect((await send()).statusCode).toBe(409);
      away = false;
      await expect.poll(() => releases, { timeout: 5000 }).toBeGreaterThanOrEqual(2);
      const retried = await send();
      expect(retried.statusCode).toBe(201);
      expect(runs).toBe(2);
    } finally {
      await other.close();
    }
  });
});
