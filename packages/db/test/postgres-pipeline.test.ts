import { createServer, Socket, type Server } from 'node:net';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, queryRows, sql, withTransaction, type DatabaseHandle } from '../src/index.js';
import { createTestDatabase, type TestDatabase } from '../src/testing.js';
import { initMigrations, schema } from './fixtures.js';

/** The one-way delay the relay adds to every answer of the server: each round trip costs at least this. */
const DELAY_MS = 150;

/** A TCP relay to the server that holds each of the server's answers DELAY_MS, as a distant database would. */
async function startSlowRelay(serverUrl: string): Promise<{ url: string; close(): Promise<void> }> {
  const target = new URL(serverUrl);
  const sockets = new Set<Socket>();
  const server: Server = createServer({ noDelay: true }, (client) => {
    const upstream = new Socket();
    sockets.add(client).add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    upstream.setNoDelay(true);
    upstream.connect(Number(target.port || 5432), target.hostname || '127.0.0.1', () => {
      client.pipe(upstream);
      upstream.on('data', (chunk: Buffer) => setTimeout(() => client.destroyed || client.write(chunk), DELAY_MS));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(serverUrl);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as { port: number }).port);
  return {
    url: url.toString(),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

// A transaction's BEGIN goes out with its first statements (patches/postgres@3.4.9.patch).
describe.skipIf(!process.env.TEST_DATABASE_URL)('a transaction on a distant database', () => {
  let base: TestDatabase<typeof schema>;
  let relay: Awaited<ReturnType<typeof startSlowRelay>>;
  let handle: DatabaseHandle<typeof schema>;

  beforeAll(async () => {
    base = await createTestDatabase({ schema, migrationsFolder: initMigrations() });
    await base.db.execute(sql`create table marks (n int primary key)`);
    relay = await startSlowRelay(base.url as string);
    handle = await createDatabase({ url: relay.url, schema, migrationsFolder: initMigrations(), poolSize: 1, migrate: false });
    await queryRows(handle.db, sql`select 1`);
  }, 60_000);

  afterAll(async () => {
    await handle?.close();
    await relay?.close();
    await base?.destroy();
  });

  const timed = async <T>(work: () => Promise<T>) => {
    const started = performance.now();
    const value = await work();
    return { value, ms: performance.now() - started };
  };

  it('sends BEGIN with its first statements: one round trip for them, one for COMMIT', async () => {
    const { value, ms } = await timed(() => withTransaction(handle.db, (tx) => queryRows<{ n: number }>(tx, sql`select 1 as n`)));
    expect(value).toEqual([{ n: 1 }]);
    // Three round trips when the callback waited for BEGIN's answer.
    expect(ms).toBeGreaterThanOrEqual(2 * DELAY_MS - 5);
    expect(ms).toBeLessThan(2.5 * DELAY_MS);
  });

  it('runs the statements sent behind BEGIN inside the transaction', async () => {
    const rows = await withTransaction(handle.db, async (tx) => {
      const [set, read] = await Promise.all([
        queryRows<{ v: string }>(tx, sql`select set_config('application_name', 'inside', true) as v`),
        queryRows<{ v: string; txid: string | null }>(tx, sql`select current_setting('application_name') as v, txid_current_if_assigned()::text as txid`),
      ]);
      return [...set, ...read];
    });
    expect(rows.map((r) => r.v)).toEqual(['inside', 'inside']);
    // The setting was the transaction's own.
    const [after] = await queryRows<{ v: string }>(handle.db, sql`select current_setting('application_name') as v`);
    expect(after!.v).not.toBe('inside');
  });

  it('rolls back what the statements behind BEGIN wrote when the callback fails', async () => {
    await expect(
      withTransaction(handle.db, async (tx) => {
        await tx.execute(sql`insert into marks values (1)`);
        throw new Error('after the write');
      }),
    ).rejects.toThrow('after the write');
    await withTransaction(handle.db, (tx) => tx.execute(sql`insert into marks values (2)`));
    const [{ n } = { n: -1 }] = await queryRows<{ n: number }>(base.db, sql`select coalesce(sum(n), 0)::int as n from marks`);
    expect(n).toBe(2);
  });

  it('still waits for a BEGIN with options before the statements behind it', async () => {
    const client = postgres(relay.url, { max: 1, onnotice: () => {} });
    try {
      // A BEGIN that fails on its options: nothing behind it ran outside a transaction.
      await expect(client.begin('isolation level bogus', (tx) => tx`insert into marks values (3)`)).rejects.toThrow();
      const [{ n } = { n: -1 }] = await queryRows<{ n: number }>(base.db, sql`select coalesce(sum(n), 0)::int as n from marks`);
      expect(n).toBe(2);
      const { ms } = await timed(() => client.begin('read only', (tx) => tx`select 1`));
      expect(ms).toBeGreaterThanOrEqual(3 * DELAY_MS - 5);
    } finally {
      await client.end({ timeout: 1 });
    }
  });
});
