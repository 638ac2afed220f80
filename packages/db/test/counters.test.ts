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
  it("counts a key's first hit alone, then reserves blocks that shrink near the limit, where every hit is counted in the database", async () => {
    const counter = createRequestCounter(handle.db);
    const max = 321;
    expect((await counter.hit('r', 60_000, max)).current).toBe(1);
    expect(await stored('r')).toBe(1);
    // The second takes its own position and reserves 1/32 of what is left (320 / 32 = 10) after it.
    expect((await counter.hit('r', 60_000, max)).current).toBe(2);
    expect(await stored('r')).toBe(12);
    const answered = [1, 2];
    for (let n = 3; n <= max + 5; n++) {
      const { current, ttl } = await counter.hit('r', 60_000, max);
      answered.push(current);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
      // The database has counted every position handed out.
      expect(await stored('r')).toBeGreaterThanOrEqual(current);
    }
    // One instance hands its positions out in order, each once.
    expect(answered).toEqual(Array.from({ length: max + 5 }, (_, i) => i + 1));
    // Within 31 of the limit no block is reserved: the database holds exactly what was answered.
    expect(await stored('r')).toBe(max + 5);
    await counter.close();
  });

  it('starts over when the window ends', async () => {
    const counter = createRequestCounter(handle.db);
    for (let i = 0; i < 3; i++) await counter.hit('window', 200, 1000);
    expect(await stored('window')).toBeGreaterThan(3);
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect((await counter.hit('window', 200, 1000)).current).toBe(1);
    expect(await stored('window')).toBe(1);
    await counter.close();
  });

  it('hands out positions once to hits made at the same time', async () => {
    const counter = createRequestCounter(handle.db);
    const counts = await Promise.all(Array.from({ length: 200 }, () => counter.hit('together', 60_000, 100_000)));
    const positions = counts.map((c) => c.current).sort((a, b) => a - b);
    expect(new Set(positions).size).toBe(200);
    expect(positions[199]).toBeLessThanOrEqual((await stored('together'))!);
    await counter.close();
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

  const spread = async (hits: number, max: number, pick: (i: number) => number, key: string) => {
    const counters = [createRequestCounter(handle.db), createRequestCounter(second.db)];
    const counts: number[] = [];
    for (let i = 0; i < hits; i++) counts.push((await counters[pick(i)]!.hit(key, 60_000, max)).current);
    for (const counter of counters) await counter.close();
    return counts;
  };

  it('holds one budget across two counters: alternated hits pass up to the limit and not one more', async () => {
    const counts = await spread(60, 40, (i) => i % 2, 'both');
    expect(counts.slice(0, 40).every((n) => n <= 40)).toBe(true);
    expect(counts.slice(40).every((n) => n > 40)).toBe(true);
    expect(new Set(counts).size).toBe(60);
  });

  it('holds it however the hits are spread: three on one for one on the other, or a burst on one then the other', async () => {
    // The counter this one replaced let 53 of these through: what one instance counted in memory,
    // the other did not see before the limit.
    const uneven = await spread(60, 40, (i) => (i % 4 === 3 ? 1 : 0), 'uneven');
    expect(uneven.filter((n) => n <= 40)).toHaveLength(40);
    const bursts = await spread(600, 400, (i) => (Math.floor(i / 50) % 2), 'bursts');
    expect(bursts.filter((n) => n <= 400)).toHaveLength(400);
    expect(new Set(bursts).size).toBe(600);
  });

  it('never lets more than the limit through from hits made at the same time on both, and refuses at most a block early', async () => {
    const counters = [createRequestCounter(handle.db), createRequestCounter(second.db)];
    const counts = await Promise.all(Array.from({ length: 1500 }, (_, i) => counters[i % 3 === 0 ? 1 : 0]!.hit('crowd', 60_000, 1000)));
    expect(counts.filter((c) => c.current <= 1000)).toHaveLength(1000);
    // A block one instance holds and never uses counts against the others.
    const held = [createRequestCounter(handle.db), createRequestCounter(second.db)];
    await held[0]!.hit('held', 60_000, 321);
    await held[0]!.hit('held', 60_000, 321); // reserves 10 after its own
    let passed = 2;
    for (let i = 0; i < 400; i++) if ((await held[1]!.hit('held', 60_000, 321)).current <= 321) passed += 1;
    expect(passed).toBe(321 - 10);
    for (const counter of [...counters, ...held]) await counter.close();
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
