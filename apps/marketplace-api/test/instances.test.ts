import { randomInt } from 'node:crypto';
import { createDatabase, queryRows, type DatabaseHandle } from '@repo/db';
import { sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { extensions, migrationsFolder, schema, type Schema } from '../src/db/index.js';
import { buildTestApp, createClient, expectError, unique, type TestApp } from './helpers.js';

// The shared stores under test: the database always, Redis when CI provides one.
const stores: { store: string; env: Record<string, string> }[] = [
  { store: 'postgres', env: {} },
  ...(process.env.TEST_REDIS_URL ? [{ store: 'redis', env: { REDIS_URL: process.env.TEST_REDIS_URL } }] : []),
];

// Two instances of the marketplace on one PostgreSQL database, as the Kubernetes manifests run them
// behind a load balancer: the request budget, the sign-in throttle, the e-mail send limits and
// sessions hold across both. (The timers, the outbox and broadcasts, which claim their rows, have
// their two-instance tests in lifecycle-timers, outbox and broadcasts.test.ts.)
describe.skipIf(!process.env.TEST_DATABASE_URL).each(stores)('two instances, counters in $store', ({ store, env }) => {
  let t: TestApp;
  let secondDb: DatabaseHandle<Schema>;
  let second: FastifyInstance;

  beforeAll(async () => {
    t = await buildTestApp({
      ...env,
      RATE_LIMIT_STORE: store,
      // The store is the app's database (the test's own, handed to both instances).
      DATABASE_URL: process.env.TEST_DATABASE_URL as string,
      RATE_LIMIT_AUTHENTICATED: '40',
      RATE_LIMIT_PUBLIC: '100000',
    });
    secondDb = await createDatabase({ url: t.database.url, schema, migrationsFolder, extensions, poolSize: 3 });
    second = await buildApp(t.config, { database: secondDb, logger: false });
    await second.ready();
    // Redis outlives the test database: user ids far apart from any earlier run keep keys apart.
    await t.database.db.execute(sql.raw(`alter table users alter column id restart with ${randomInt(1, 2 ** 30)}`));
  }, 60_000);
  afterAll(async () => {
    await second?.close();
    await secondDb?.close();
    await t?.close();
  });

  const instances = () => [t.app, second];
  const post = (i: number, url: string, payload: object, remoteAddress = '127.0.0.1') =>
    instances()[i % 2]!.inject({ method: 'POST', url: `/api/v1${url}`, payload, remoteAddress });

  it('holds one per-minute budget across both: 40 of 60 requests alternated between them pass', async () => {
    const client = await createClient(t);
    const statuses: number[] = [];
    for (let i = 0; i < 60; i++) {
      const res = await instances()[i % 2]!.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${client.token}` } });
      statuses.push(res.statusCode);
      if (res.statusCode === 429) {
        expectError(res, 429, 'rate_limited');
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }
    }
    expect(statuses.slice(0, 40).every((s) => s === 200)).toBe(true);
    expect(statuses.slice(40).every((s) => s === 429)).toBe(true);
  });

  it('trips the sign-in throttle at the 6th wrong password alternated between them, as on one', async () => {
    const client = await createClient(t);
    const ip = `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await post(i, '/auth/login', { email: client.email, password: 'not the password' }, ip));
    expect(answers.map((r) => r.statusCode)).toEqual([401, 401, 401, 401, 401, 429]);
    expect(answers[5]!.headers['retry-after']).toBe('1');
    // The owner, from an address that has not failed, gets in on either instance.
    const ok = await post(1, '/auth/login', { email: client.email, password: client.password }, '192.0.2.77');
    expect(ok.statusCode, ok.body).toBe(200);
  });

  it('sends an address 5 codes an hour across both, then answers 429 with Retry-After', async () => {
    const address = `shared${unique()}-${randomInt(2 ** 30)}@example.test`;
    for (let i = 0; i < 5; i++) expect((await post(i, '/auth/send-email-verification-otp', { email: address })).statusCode).toBe(200);
    const limited = expectError(await post(5, '/auth/send-email-verification-otp', { email: address }), 429, 'rate_limited');
    expect(limited.message).toMatch(/Too many e-mails/);
    const refused = await post(6, '/auth/send-email-verification-otp', { email: address });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(3000);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(3600);
  });

  it('does a write sent with one Idempotency-Key to each instance once: the second replays the first', async () => {
    const client = await createClient(t);
    const headers = { authorization: `Bearer ${client.token}`, 'idempotency-key': `both-${unique()}` };
    const payload = { make: 'Renault', model: 'Clio', year: 2019, fuel: 'diesel', mileage: 84_000 };
    const [a, b] = [await t.app.inject({ method: 'POST', url: '/api/v1/vehicles', headers, payload }), await second.inject({ method: 'POST', url: '/api/v1/vehicles', headers, payload })];
    expect(a.statusCode, a.body).toBe(201);
    expect(b.headers['idempotent-replayed']).toBe('true');
    expect(b.body).toBe(a.body);
    const owned = await queryRows<{ n: number }>(t.database.db, sql`select count(*)::int as n from vehicles where owner_id = ${client.user.id}`);
    expect(owned[0]?.n).toBe(1);
  });

  it('ends a session on both when it signs out on one', async () => {
    const client = await createClient(t);
    const headers = { authorization: `Bearer ${client.token}` };
    expect((await second.inject({ method: 'GET', url: '/api/v1/auth/me', headers })).statusCode).toBe(200);
    expect((await second.inject({ method: 'POST', url: '/api/v1/auth/logout', headers })).statusCode).toBe(200);
    for (const app of instances()) expectError(await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers }), 401, 'unauthenticated');
  });
});
