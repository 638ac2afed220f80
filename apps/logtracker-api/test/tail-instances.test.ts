import type { AddressInfo } from 'node:net';
import { createDatabase, type DatabaseHandle } from '@repo/db';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { buildApp } from '../src/app.js';
import { migrationsFolder, schema, type Schema } from '../src/db/index.js';
import { buildTestApp, createProject, createUser, type TestApp, type TestUser } from './helpers.js';

// Two instances of the log tracker on one PostgreSQL database, as behind a load balancer: a tail
// opened on one hears the logs ingested through the other (LISTEN/NOTIFY), big batches included.
describe.skipIf(!process.env.TEST_DATABASE_URL)('the live tail across instances (PostgreSQL)', () => {
  let t: TestApp;
  let secondDb: DatabaseHandle<Schema>;
  let second: FastifyInstance;
  let secondBase: string;
  let owner: TestUser;
  let projectId: number;
  const sockets: WebSocket[] = [];

  beforeAll(async () => {
    t = await buildTestApp();
    secondDb = await createDatabase({ url: t.database.url, schema, migrationsFolder, extensions: ['pg_trgm', 'btree_gin'], poolSize: 3 });
    second = await buildApp(t.config, { database: secondDb, logger: false });
    await second.listen({ port: 0, host: '127.0.0.1' });
    secondBase = `ws://127.0.0.1:${(second.server.address() as AddressInfo).port}`;
    owner = await createUser(t);
    projectId = (await createProject(t, owner)).id;
  }, 60_000);
  afterAll(async () => {
    for (const ws of sockets) ws.terminate();
    await second?.close();
    await secondDb?.close();
    await t?.close();
  });

  it('streams to a tail on the second instance the logs submitted through the first, in order', async () => {
    const ws = new WebSocket(`${secondBase}/api/projects/${projectId}/logs/tail`, { headers: owner.headers });
    sockets.push(ws);
    const messages: string[] = [];
    let ready = false;
    ws.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString()) as { type: string; data?: { message: string } };
      if (frame.type === 'ready') ready = true;
      if (frame.type === 'log' && frame.data) messages.push(frame.data.message);
    });
    await expect.poll(() => ready).toBe(true);

    // The first instance learns of the tail from the second's announcement: probe until it has.
    let probes = 0;
    await expect
      .poll(
        async () => {
          const res = await t.app.inject({
            method: 'POST',
            url: `/api/projects/${projectId}/logs`,
            headers: owner.headers,
            payload: { level: 'info', message: `probe ${++probes}` },
          });
          expect(res.statusCode).toBe(201);
          return messages.length > 0;
        },
        { timeout: 5000, interval: 50 },
      )
      .toBe(true);

    messages.length = 0;
    // Far larger than one notification: carried through the overflow table.
    const batch = Array.from({ length: 500 }, (_, i) => ({ level: 'warning', message: `batch entry ${i} ${'x'.repeat(40)}` }));
    const res = await t.app.inject({ method: 'POST', url: `/api/projects/${projectId}/logs/batch`, headers: owner.headers, payload: { logs: batch } });
    expect(res.statusCode, res.body).toBe(201);
    await expect.poll(() => messages.filter((m) => m.startsWith('batch entry')).length, { timeout: 5000 }).toBe(500);
    expect(messages.filter((m) => m.startsWith('batch entry'))).toEqual(batch.map((e) => e.message));
  });
});
