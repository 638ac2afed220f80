import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, createFanout, queryRows, sql, withTransaction, type DatabaseHandle, type Fanout } from '../src/index.js';
import { createTestDatabase, type TestDatabase } from '../src/testing.js';
import { initMigrations, schema } from './fixtures.js';

// The fan-out on whichever backend createTestDatabase gives: PGlite notifies its own process,
// PostgreSQL every connection listening; the cross-instance cases need a server.
let handle: TestDatabase<typeof schema>;
const fanouts: Fanout[] = [];

beforeAll(async () => {
  handle = await createTestDatabase({ schema, migrationsFolder: initMigrations() });
  await handle.db.execute(
    sql`create table fanout_payloads (id bigint primary key generated always as identity, payload text not null, created_at timestamptz not null default now())`,
  );
}, 60_000);

afterAll(async () => {
  for (const f of fanouts) await f.close();
  await handle?.destroy();
});

async function started(database: Pick<DatabaseHandle<Record<string, unknown>>, 'db' | 'listen'>, channel = 'test_fanout', interestMs?: number) {
  const fanout = createFanout(database, { channel, interestMs, onError: (error) => { throw error; } });
  await fanout.start();
  fanouts.push(fanout);
  return fanout;
}

function until<T>(probe: () => T | undefined, ms = 3000): Promise<T> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const tick = () => {
      const value = probe();
      if (value !== undefined) return resolve(value);
      if (Date.now() - started > ms) return reject(new Error('timed out waiting'));
      setTimeout(tick, 10);
    };
    tick();
  });
}

describe('fan-out on one database handle', () => {
  it('delivers a message to the topic\'s subscribers only, and nothing after unsubscribing', async () => {
    const fanout = await started(handle, 'one_handle');
    const got: unknown[] = [];
    const other: unknown[] = [];
    const stop = fanout.subscribe('room.1', (m) => got.push(m));
    fanout.subscribe('room.2', (m) => other.push(m));
    await fanout.publish('room.1', { hello: 'world' });
    await until(() => (got.length ? got : undefined));
    expect(got).toEqual([{ hello: 'world' }]);
    expect(other).toEqual([]);
    stop();
    await fanout.publish('room.1', { again: true });
    await fanout.publish('room.2', { second: true });
    await until(() => (other.length ? other : undefined));
    expect(got).toHaveLength(1);
  });

  it('sends a message with its transaction: nothing if it rolls back, once it commits', async () => {
    const fanout = await started(handle, 'with_tx');
    const got: unknown[] = [];
    fanout.subscribe('t', (m) => got.push(m));
    await expect(
      withTransaction(handle.db, async (tx) => {
        await fanout.publish('t', { n: 1 }, { tx });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    await withTransaction(handle.db, async (tx) => {
      await fanout.publish('t', { n: 2 }, { tx });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(got).toEqual([]);
    });
    await until(() => (got.length ? got : undefined));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(got).toEqual([{ n: 2 }]);
  });

  it('carries a payload larger than a notification through the overflow table, read back by id', async () => {
    const fanout = await started(handle, 'big');
    const got: { text: string }[] = [];
    fanout.subscribe('big', (m) => got.push(m as { text: string }));
    const text = 'é'.repeat(20_000);
    await fanout.publish('big', { text });
    const [message] = await until(() => (got.length ? got : undefined));
    expect(message?.text).toBe(text);
    const rows = await queryRows<{ n: number }>(handle.db, sql`select count(*)::int as n from fanout_payloads`);
    expect(rows[0]?.n).toBeGreaterThanOrEqual(1);
  });

  it('leaves out this instance for a message meant for the others only', async () => {
    const fanout = await started(handle, 'others_only');
    const got: unknown[] = [];
    fanout.subscribe('o', (m) => got.push(m));
    await fanout.publish('o', { skip: true }, { othersOnly: true });
    await fanout.publish('o', { keep: true });
    await until(() => (got.length ? got : undefined));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(got).toEqual([{ keep: true }]);
    expect(fanout.hasSubscribers('o')).toBe(true);
    expect(fanout.hasSubscribers('o', { othersOnly: true })).toBe(false);
  });

  it('refuses a channel name that is not a plain identifier', () => {
    expect(() => createFanout(handle, { channel: 'bad; drop table x' })).toThrow(/plain identifier/);
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('fan-out across instances (PostgreSQL)', () => {
  let second: DatabaseHandle<Record<string, unknown>>;

  beforeAll(async () => {
    second = await createDatabase({ url: handle.url, schema: {}, migrationsFolder: initMigrations(), poolSize: 2 });
  });
  afterAll(async () => {
    await second?.close();
  });

  it('delivers what one instance publishes to the subscribers of another, big payloads included', async () => {
    const a = await started(handle, 'across');
    const b = await started(second, 'across');
    const got: unknown[] = [];
    b.subscribe('room', (m) => got.push(m));
    await until(() => (a.hasSubscribers('room', { othersOnly: true }) ? true : undefined));
    await a.publish('room', { small: 1 });
    await a.publish('room', { big: 'x'.repeat(10_000) });
    await until(() => (got.length === 2 ? got : undefined));
    expect(got[0]).toEqual({ small: 1 });
    expect((got[1] as { big: string }).big).toHaveLength(10_000);
  });

  it('tells an instance which topics another has subscribers for, and forgets them when they go', async () => {
    const a = await started(handle, 'interest');
    const b = await started(second, 'interest');
    expect(a.hasSubscribers('project.7')).toBe(false);
    const stop = b.subscribe('project.7', () => {});
    await until(() => (a.hasSubscribers('project.7') ? true : undefined));
    stop();
    await until(() => (a.hasSubscribers('project.7') ? undefined : true));
    // A newcomer asks on start and hears the topics already subscribed elsewhere.
    b.subscribe('project.8', () => {});
    const c = await started(handle, 'interest');
    await until(() => (c.hasSubscribers('project.8') ? true : undefined));
  });

  it('listens again after its listening connection is cut, and delivers what follows', async () => {
    const a = await started(handle, 'reconnect');
    const b = await started(second, 'reconnect');
    const got: unknown[] = [];
    b.subscribe('r', (m) => got.push(m));
    const admin = postgres(handle.url as string, { max: 1, onnotice: () => {} });
    try {
      const cut = await admin`select pg_terminate_backend(pid) as ok from pg_stat_activity where query ilike '%listen%reconnect%' and pid <> pg_backend_pid() and datname = current_database()`;
      expect(cut.length).toBeGreaterThanOrEqual(2);
    } finally {
      await admin.end({ timeout: 5 });
    }
    // Publish until the listener is back: postgres.js reconnects with a short backoff.
    let n = 0;
    await until(() => {
      void a.publish('r', { n: ++n }).catch(() => undefined);
      return got.length ? got : undefined;
    }, 10_000);
    expect(got.length).toBeGreaterThanOrEqual(1);
  }, 20_000);
});
