import { randomInt } from 'node:crypto';
import { createDatabase, type DatabaseHandle } from '@repo/db';
import { eq, sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { migrationsFolder, schema, type Schema } from '../src/db/index.js';
import { logs, projects } from '../src/db/schema/index.js';
import { createMaintenanceJob } from '../src/jobs/maintenance.js';
import { createRetentionJob, type JobLogger } from '../src/jobs/retention.js';
import { buildTestApp, createLogs, createProject, createUser, PASSWORD, type TestApp, type TestUser } from './helpers.js';

const DAY = 86_400_000;
const quiet: JobLogger = { info: () => {}, error: () => {} };

// The shared stores under test: the database always, Redis when CI provides one.
const stores: { store: string; env: Record<string, string> }[] = [
  { store: 'postgres', env: {} },
  ...(process.env.TEST_REDIS_URL ? [{ store: 'redis', env: { REDIS_URL: process.env.TEST_REDIS_URL } }] : []),
];

// Two instances of the log tracker on one PostgreSQL database, as the Kubernetes manifests run them
// behind a load balancer: budgets, throttles, sessions and background jobs hold across both.
describe.skipIf(!process.env.TEST_DATABASE_URL).each(stores)('two instances, counters in $store', ({ store, env }) => {
  let t: TestApp;
  let secondDb: DatabaseHandle<Schema>;
  let second: FastifyInstance;
  let owner: TestUser;

  beforeAll(async () => {
    t = await buildTestApp({
      ...env,
      RATE_LIMIT_STORE: store,
      // The store is the app's database (the test's own, handed to both instances).
      DATABASE_URL: process.env.TEST_DATABASE_URL as string,
      RATE_LIMIT_AUTHENTICATED: '40',
      RATE_LIMIT_PUBLIC: '100000',
    });
    secondDb = await createDatabase({ url: t.database.url, schema, migrationsFolder, extensions: ['pg_trgm', 'btree_gin'], poolSize: 3 });
    second = await buildApp(t.config, { database: secondDb, logger: false });
    await second.ready();
    // Redis outlives the test database: user ids far apart from any earlier run keep keys apart.
    await t.database.db.execute(sql.raw(`alter table users alter column id restart with ${randomInt(1, 2 ** 30)}`));
    owner = await createUser(t);
  }, 60_000);
  afterAll(async () => {
    await second?.close();
    await secondDb?.close();
    await t?.close();
  });

  const instances = () => [t.app, second];

  it('holds one per-minute budget across both: 40 of 60 requests alternated between them pass', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 60; i++) {
      const res = await instances()[i % 2]!.inject({ method: 'GET', url: '/api/user', headers: owner.headers });
      statuses.push(res.statusCode);
      if (res.statusCode === 429) {
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(res.json()).toMatchObject({ error: 'rate_limited' });
      }
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(40);
    expect(statuses.slice(0, 40).every((s) => s === 200)).toBe(true);
    expect(statuses.slice(40).every((s) => s === 429)).toBe(true);
  });

  it('trips the login throttle at the 6th wrong password alternated between them, as on one', async () => {
    const user = await createUser(t);
    const remoteAddress = `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;
    const statuses: number[] = [];
    let retryAfter: string | string[] | undefined;
    for (let i = 0; i < 6; i++) {
      const res = await instances()[i % 2]!.inject({
        method: 'POST',
        url: '/api/auth/login',
        payload: { email: user.email, password: 'not the password' },
        remoteAddress,
      });
      statuses.push(res.statusCode);
      retryAfter = res.headers['retry-after'];
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
    expect(retryAfter).toBe('1');
    // The right password from another address still gets in, on either instance.
    const ok = await second.inject({ method: 'POST', url: '/api/auth/login', payload: { email: user.email, password: PASSWORD }, remoteAddress: '192.0.2.77' });
    expect(ok.statusCode, ok.body).toBe(200);
  });

  it('stores a batch sent with one Idempotency-Key to each instance once: the second replays the first', async () => {
    // A user of its own: the budget test spent the owner's.
    const writer = await createUser(t);
    const projectId = (await createProject(t, writer)).id;
    const headers = { ...writer.headers, 'idempotency-key': `both-${randomInt(1, 2 ** 30)}` };
    const payload = { logs: [{ level: 'info', message: 'once across instances' }, { level: 'error', message: 'and this one' }] };
    const url = `/api/projects/${projectId}/logs/batch`;
    const a = await t.app.inject({ method: 'POST', url, headers, payload });
    const b = await second.inject({ method: 'POST', url, headers, payload });
    expect(a.statusCode, a.body).toBe(201);
    expect(b.headers['idempotent-replayed']).toBe('true');
    expect(b.body).toBe(a.body);
    expect(await t.database.db.$count(logs, eq(logs.projectId, projectId))).toBe(2);
  });

  it('ends a session on both when it signs out on one', async () => {
    const user = await createUser(t);
    const signedIn = await t.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: user.email, password: PASSWORD } });
    expect(signedIn.statusCode, signedIn.body).toBe(200);
    const headers = { authorization: `Bearer ${signedIn.json().data.token as string}` };
    expect((await second.inject({ method: 'GET', url: '/api/user', headers })).statusCode).toBe(200);
    expect((await second.inject({ method: 'POST', url: '/api/auth/logout', headers })).statusCode).toBe(200);
    for (const app of instances()) expect((await app.inject({ method: 'GET', url: '/api/user', headers })).statusCode).toBe(401);
  });

  it('runs a retention tick on one instance only: the other skips it while it runs', async () => {
    const project = await createProject(t, owner);
    await t.database.db.update(projects).set({ retentionDays: 1 }).where(eq(projects.id, project.id));
    const now = Date.now();
    await createLogs(t, project.id, Array.from({ length: 30 }, (_, i) => ({ message: `old ${i}`, timestamp: new Date(now - 3 * DAY - i * 1000) })));
    // Small batches with pauses: the run that gets the lock holds it while the other one tries.
    const jobs = [t.database, secondDb].map((database) =>
      createRetentionJob({ db: database.db, logger: quiet, batchSize: 3, pauseMs: 20, exclusive: database.exclusive }),
    );
    const results = await Promise.all(jobs.map((job) => job.runOnce()));
    expect(results.filter((r) => r.skipped)).toHaveLength(1);
    expect(results.map((r) => r.deleted).sort((a, b) => a - b)).toEqual([0, 30]);
    const [left] = await t.database.db.select({ n: sql<number>`count(*)::int` }).from(logs).where(eq(logs.projectId, project.id));
    expect(left?.n).toBe(0);
    // Once the lock is free, the next tick runs wherever it starts.
    expect((await jobs[1]!.runOnce()).skipped).toBeUndefined();
  });

  it('runs a maintenance pass on one instance only', async () => {
    const held = await t.database.exclusive('logtracker:maintenance', () =>
      createMaintenanceJob({ db: secondDb.db, logger: quiet, exclusive: secondDb.exclusive }).runOnce(),
    );
    expect(held).toEqual({ partitionsCreated: 0, rollupRowsCompacted: 0, skipped: true });
    const free = await createMaintenanceJob({ db: secondDb.db, logger: quiet, exclusive: secondDb.exclusive }).runOnce();
    expect(free.skipped).toBeUndefined();
  });
});
