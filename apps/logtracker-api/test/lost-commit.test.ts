import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { createDatabase, queryRows, sql, type DatabaseHandle } from '@repo/db';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { migrationsFolder, schema, type Schema } from '../src/db/index.js';
import { buildTestApp, createProject, createUser, type TestApp, type TestUser } from './helpers.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * What the relay does to the next write's end (a batch of one slice is one statement, counted on
 * the key's row in a WITH in front of it; a larger one is a transaction):
 * - `answer-lost`: the server commits, and its answer (to the two-row insert, or to COMMIT) never
 *   reaches the app: the connection is reset as that answer passes, as when the primary is lost
 *   just then;
 * - `never-committed`: the statement, or the COMMIT, never reaches the server (the connection is
 *   reset as it is sent), so nothing is stored.
 */
type Cut = 'answer-lost' | 'never-committed';

/**
 * A relay in front of the real server, speaking the real protocol both ways, that cuts one
 * connection at the end of a transaction, and can refuse connections for a while.
 */
async function startCommitCutter(serverUrl: string) {
  const target = new URL(serverUrl);
  let armed: Cut | undefined;
  let refusing = false;
  const cuts: Cut[] = [];
  const sockets = new Set<Socket>();
  const cut = (client: Socket, upstream: Socket, what: Cut) => {
    armed = undefined;
    cuts.push(what);
    upstream.destroy();
    client.resetAndDestroy();
  };
  const server: Server = createServer({ noDelay: true }, (client) => {
    if (refusing) return client.resetAndDestroy();
    const upstream = connect(Number(target.port || 5432), target.hostname || '127.0.0.1');
    sockets.add(client).add(upstream);
    const drop = () => {
      sockets.delete(client);
      sockets.delete(upstream);
      if (!client.destroyed) client.destroy();
      if (!upstream.destroyed) upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.on('data', (chunk: Buffer) => {
      // The statement's text travels once per connection (then it is prepared): a fresh pool.
      if (armed === 'never-committed' && /(^|\0)commit\0|with claimed as/i.test(chunk.toString('latin1'))) return cut(client, upstream, armed);
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      // CommandComplete of a COMMIT, or of the two-row batch's statement: it is committed on the server.
      if (armed === 'answer-lost' && (chunk.includes('COMMIT\0') || chunk.includes('INSERT 0 2\0'))) return cut(client, upstream, armed);
      client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(serverUrl);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as AddressInfo).port);
  return {
    url: url.toString(),
    arm: (what: Cut) => (armed = what),
    cuts,
    /** Resets every connection and refuses new ones (the database away), or accepts them again. */
    refuse(on: boolean) {
      refusing = on;
      if (on) for (const socket of sockets) socket.resetAndDestroy();
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// An Idempotency-Key's write whose commit is in flight when the connection is lost (a failover):
// stored, it is acknowledged once and never done again; not stored, it is refused and a retry does it.
describe.skipIf(!process.env.TEST_DATABASE_URL)('a batch whose commit answer is lost', () => {
  let t: TestApp;
  let owner: TestUser;
  let projectId: number;
  let relay: Awaited<ReturnType<typeof startCommitCutter>>;
  let proxied: DatabaseHandle<Schema> | undefined;
  let app: FastifyInstance | undefined;

  beforeAll(async () => {
    t = await buildTestApp();
    owner = await createUser(t);
    projectId = (await createProject(t, owner)).id;
    relay = await startCommitCutter(t.database.url as string);
  });
  afterEach(async () => {
    await app?.close();
    await proxied?.close();
    app = proxied = undefined;
    relay.refuse(false);
  });
  afterAll(async () => {
    await relay?.close();
    await t?.close();
  });

  /** The app on a pool of its own through the relay. */
  async function startApp() {
    proxied = await createDatabase({ url: relay.url, schema, migrationsFolder, extensions: ['pg_trgm', 'btree_gin'], poolSize: 2 });
    app = await buildApp(t.config, { database: proxied, logger: false });
    await app.ready();
    return app;
  }

  const send = (key: string, message: string) =>
    app!.inject({
      method: 'POST',
      url: `/api/projects/${projectId}/logs/batch`,
      headers: { ...owner.headers, 'idempotency-key': key },
      payload: { logs: [{ level: 'info', message }, { level: 'warning', message }] },
    });
  const stored = async (message: string) =>
    (await queryRows<{ n: number }>(t.database.db, sql`select count(*)::int as n from logs where project_id = ${projectId} and message = ${message}`))[0]?.n;

  /** A write whose answer the relay cuts: acknowledged all the same, then replayed to its retry. */
  async function expectAcknowledgedThenReplayed(post: () => Promise<LightMyRequestResponse>) {
    relay.cuts.length = 0;
    relay.arm('answer-lost');
    const first = await post();
    expect(relay.cuts).toEqual(['answer-lost']);
    expect(first.statusCode, first.body).toBe(201);
    const retry = await post();
    expect(retry.statusCode).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
  }

  it('acknowledges a commit that happened once the database says so, and replays it to a retry', async () => {
    await startApp();
    await expectAcknowledgedThenReplayed(() => send('lost-answer-1', 'committed, answer lost'));
    expect(await stored('committed, answer lost')).toBe(2);
  });

  it('answers 503 while the database is away, then replays the stored batch to the retry: stored once', async () => {
    await startApp();
    relay.cuts.length = 0;
    relay.arm('answer-lost');
    // The database goes away as the answer to COMMIT is lost: nothing can tell yet whether it happened.
    const cutting = setInterval(() => relay.cuts.length > 0 && (relay.refuse(true), clearInterval(cutting)), 1);
    const first = await send('lost-answer-2', 'committed while away');
    clearInterval(cutting);
    expect(first.statusCode, first.body).toBe(503);
    expect(Number(first.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(first.headers.location).toBeUndefined();
    relay.refuse(false);
    // Settled in the background within a few seconds of the database's return; until then a retry
    // is told to wait, and never does the work again.
    let retry = await send('lost-answer-2', 'committed while away');
    for (let i = 0; i < 40 && retry.statusCode !== 201; i++) {
      expect([409, 503], retry.body).toContain(retry.statusCode);
      await sleep(250);
      retry = await send('lost-answer-2', 'committed while away');
    }
    expect(retry.statusCode, retry.body).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(await stored('committed while away')).toBe(2);
  });

  it('settles a batch of several slices (a transaction) whose COMMIT answer is lost: acknowledged and replayed, stored once', async () => {
    await startApp();
    // Over 512 KiB of JSON: two slices, stored in one transaction.
    const pad = 'x'.repeat(1000);
    const logs = Array.from({ length: 600 }, (_, i) => ({ level: 'info', message: `sliced ${i} ${pad}` }));
    await expectAcknowledgedThenReplayed(() =>
      app!.inject({ method: 'POST', url: `/api/projects/${projectId}/logs/batch`, headers: { ...owner.headers, 'idempotency-key': 'sliced-1' }, payload: { logs } }),
    );
    const [row] = await queryRows<{ n: number }>(t.database.db, sql`select count(*)::int as n from logs where project_id = ${projectId} and message like 'sliced %'`);
    expect(row?.n).toBe(600);
  });

  it('refuses a batch whose commit never reached the server, and the retry stores it once', async () => {
    await startApp();
    relay.cuts.length = 0;
    relay.arm('never-committed');
    const first = await send('never-committed-1', 'rolled back, then retried');
    expect(relay.cuts).toEqual(['never-committed']);
    expect(first.statusCode, first.body).toBe(503);
    expect(await stored('rolled back, then retried')).toBe(0);
    const retry = await send('never-committed-1', 'rolled back, then retried');
    expect(retry.statusCode, retry.body).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(await stored('rolled back, then retried')).toBe(2);
  });
});
