import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countHit, createDatabase, createRequestCounter, purgeExpiredCounters, queryRows, sql, SKIPPED, type DatabaseHandle } from '../src/index.js';
import { createTestDatabase, type TestDatabase } from '../src/testing.js';
import { initMigrations, schema } from './fixtures.js';

// The shared counters on whichever backend createTestDatabase gives; what needs two connection
// pools (two instances) needs a server.
let handle: TestDatabase<typeof schema>;

beforeAll(async () => {
  handle = await createTestDatabase({ schema, migrationsFolder: initMigrations() });
  await handle.db.execute(sql`create unlogged table rate_limit_counters (key text primary key, points integer not null, expire timestamptz)`);
}, 60_000);

afterAll(async () => {
  await handle?.destroy();
});

const stored = async (key: string) =>
  (await queryRows<{ points: number }>(handle.db, sql`select points from rate_limit_counters where key = ${key}`))[0]?.points;

describe('countHit', () => {
  it('counts hits in a fixed window from the first one, and starts over once it has ended', async () => {
    expect(await countHit(handle.db, 'a', 60_000)).toMatchObject({ current: 1 });
    const second = await countHit(handle.db, 'a', 60_000, 2);
    expect(second.current).toBe(3);
    expect(second.ttl).toBeGreaterThan(58_000);
    expect(second.ttl).toBeLessThanOrEqual(60_000);
    await countHit(handle.db, 'short', 50);
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect((await countHit(handle.db, 'short', 50)).current).toBe(1);
  });

  it('deletes the rows whose window ended over an hour ago, and only those', async () => {
    await handle.db.execute(sql`insert into rate_limit_counters values ('stale', 3, now() - interval '2 hours'), ('recent', 3, now() - interval '10 minutes')`);
    expect(await purgeExpiredCounters(handle.db)).toBe(1);
    expect(await stored('stale')).toBeUndefined();
    expect(await stored('recent')).toBe(3);
  });
});

describe('createRequestCounter', () => {
  it('counts far from the limit here, sends the hits in one flush, and counts near the limit in the database', async () => {
    const counter = createRequestCounter(handle.db, { flushMs: 300 });
    // The first hit of a key goes to the database; the next ones below half the limit stay here.
    expect((await counter.hit('r', 60_000, 10)).current).toBe(1);
    expect((await counter.hit('r', 60_000, 10)).current).toBe(2);
    expect((await counter.hit('r', 60_000, 10)).current).toBe(3);
    expect(await stored('r')).toBe(1);
    await expect.poll(() => stored('r')).toBe(3);
    expect((await counter.hit('r', 60_000, 10)).current).toBe(4);
    expect(await stored('r')).toBe(3);
    // From half the limit on, every hit is counted in the database (the pending one with it).
    for (let n = 5; n <= 12; n++) {
      expect((await counter.hit('r', 60_000, 10)).current).toBe(n);
      expect(await stored('r')).toBe(n);
    }
    await counter.close();
  });

  it('sends what is pending when closed', async () => {
    const counter = createRequestCounter(handle.db, { flushMs: 60_000 });
    for (let i = 0; i < 4; i++) await counter.hit('closing', 60_000, 100);
    expect(await stored('closing')).toBe(1);
    await counter.close();
    expect(await stored('closing')).toBe(4);
  });
});

describe('exclusive', () => {
  it('runs the work and answers its result when no one holds the lock', async () => {
    expect(await handle.exclusive('job', async () => 42)).toBe(42);
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('across instances (PostgreSQL)', () => {
  let second: DatabaseHandle<Record<string, unknown>>;

  beforeAll(async () => {
    second = await createDatabase({ url: handle.url, schema: {}, migrationsFolder: initMigrations(), poolSize: 2 });
  });
  afterAll(async () => {
    await second?.close();
  });

  it('holds one budget across two counters: alternated hits are refused from the limit on', async () => {
    const counters = [createRequestCounter(handle.db, { flushMs: 20 }), createRequestCounter(second.db, { flushMs: 20 })];
    const counts: number[] = [];
    for (let i = 0; i < 30; i++) counts.push((await counters[i % 2]!.hit('both', 60_000, 20)).current);
    // At or past 20, every hit has been counted exactly.
    expect(counts.slice(20)).toEqual(Array.from({ length: 10 }, (_, i) => 21 + i));
    expect(counts.slice(0, 20).every((n) => n <= 20)).toBe(true);
    for (const counter of counters) await counter.close();
    expect(await stored('both')).toBe(30);
  });

  it('lets one instance run an exclusive job while the other is skipped, then frees it', async () => {
    let release!: () => void;
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const held = handle.exclusive('tick', () => {
      started();
      return new Promise<string>((resolve) => (release = () => resolve('ran')));
    });
    // Only once the first instance runs its job does it hold the lock: asking earlier races it.
    await running;
    expect(await second.exclusive('tick', async () => 'also ran')).toBe(SKIPPED);
    release();
    expect(await held).toBe('ran');
    expect(await second.exclusive('tick', async () => 'now ran')).toBe('now ran');
  });
});
