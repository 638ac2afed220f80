import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server, type Socket } from 'node:net';
import { asUnavailable, createDatabase, DatabaseUnavailableError, isDatabaseUnavailable, queryRows, sql, withTransaction, type DatabaseHandle, type StartupAttempt } from '../src/index.js';
import { initMigrations, schema } from './fixtures.js';
import { startReplicaSet, type ReplicaSet } from './replica-set.js';

/**
 * A primary and a hot standby of the machine's PostgreSQL: what the app meets during a failover behind
 * a multi-host URL (pg_auto_failover, Patroni). In the pass on PostgreSQL (TEST_DATABASE_URL set: CI
 * has the binaries and the account to run them as then), with servers of its own; skipped otherwise,
 * and without the binaries.
 */
const set: ReplicaSet | undefined = process.env.TEST_DATABASE_URL ? await startReplicaSet() : undefined;
const BOUND_MS = 800;

/** The driver's codes along an error's cause chain. */
function codes(error: unknown): unknown[] {
  const found: unknown[] = [];
  for (let e = error; e && typeof e === 'object'; e = (e as { cause?: unknown }).cause) found.push((e as { code?: unknown }).code);
  return found;
}

/** What the HTTP error handler answers for it: 503 with Retry-After. */
function answeredAs503(error: unknown): boolean {
  return isDatabaseUnavailable(error) && asUnavailable(error) instanceof DatabaseUnavailableError && (asUnavailable(error) as DatabaseUnavailableError).statusCode === 503;
}

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; error: unknown }> {
  const started = performance.now();
  const error = await work().then(
    () => undefined,
    (e: unknown) => e,
  );
  return { ms: performance.now() - started, error };
}

describe.skipIf(!set)('a primary and its standby behind one URL', () => {
  const handles: DatabaseHandle<typeof schema>[] = [];
  const open = async (url: string, extra: { poolSize?: number; startupTimeoutMs?: number; onWaiting?: (a: StartupAttempt) => void; migrate?: boolean } = {}) => {
    const handle = await createDatabase({ url, schema, migrationsFolder: initMigrations(), poolSize: 2, acquireTimeoutMs: BOUND_MS, ...extra });
    handles.push(handle);
    return handle;
  };

  beforeAll(async () => {
    // The standby has caught up with what the primary holds.
    const primary = await open(set!.url([set!.primaryPort]));
    await primary.db.execute(sql`create table marks (id int primary key)`);
    const standby = await open(set!.url([set!.standbyPort]));
    for (let i = 0; i < 100 && !(await queryRows<{ ok: boolean }>(standby.db, sql`select to_regclass('marks') is not null as ok`))[0]?.ok; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });

  afterAll(async () => {
    await Promise.all(handles.map((h) => h.close()));
    await set?.stop();
  });

  it('picks the primary from a URL that lists the standby first, for read-write and for primary', async () => {
    for (const attrs of ['read-write', 'primary']) {
      const handle = await open(set!.url([set!.standbyPort, set!.primaryPort], `?target_session_attrs=${attrs}`), { poolSize: 3 });
      // Every connection of the pool: the first host answers first, and was taken before.
      const rows = await Promise.all(Array.from({ length: 6 }, () => queryRows<{ standby: boolean }>(handle.db, sql`select pg_is_in_recovery() as standby, pg_sleep(0.05)`)));
      expect(rows.map((r) => r[0]?.standby), attrs).toEqual(Array(6).fill(false));
      expect((await handle.ping()).ok).toBe(true);
    }
    // A multi-host URL without target_session_attrs means read-write for the app.
    const bare = await open(set!.url([set!.standbyPort, set!.primaryPort]));
    await bare.db.execute(sql`insert into marks values (1)`);
  });

  it('fails within the acquire bound as unavailable when only a standby answers, queries and transactions alike', async () => {
    const handle = await open(set!.url([set!.standbyPort], '?target_session_attrs=read-write'), { poolSize: 2 });
    const first = await timed(() => queryRows(handle.db, sql`select 1`));
    expect(isDatabaseUnavailable(first.error), String(first.error)).toBe(true);
    expect(codes(first.error)).toContain('TARGET_SESSION_ATTRS_UNMET');
    expect(first.ms).toBeLessThan(BOUND_MS + 1000);
    // Many at once on a pool of two: each fails, none waits past the bound (the circuit refuses
    // most at once, the rest are cancelled by the acquire bound).
    const many = await Promise.all([
      ...Array.from({ length: 20 }, () => timed(() => queryRows(handle.db, sql`select 1`))),
      ...Array.from({ length: 5 }, () => timed(() => withTransaction(handle.db, (tx) => tx.execute(sql`insert into marks values (2)`)))),
    ]);
    for (const { ms, error } of many) {
      expect(answeredAs503(error), String(error)).toBe(true);
      expect(ms).toBeLessThan(BOUND_MS + 1500);
    }
    expect(handle.poolStats()[0]?.inFlight).toBe(0);
    const ping = await handle.ping();
    expect(ping.ok).toBe(false);
  });

  it('bounds the wait for a connection while the first host does not answer (a node lost), then fails as unavailable', async () => {
    // A host that accepts and never answers, as a node whose packets are dropped: each attempt on it
    // waits for connect_timeout (1.5 s), longer than the acquire bound.
    const held: Socket[] = [];
    const silent: Server = createServer((socket) => held.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const port = (silent.address() as { port: number }).port;
      const handle = await open(set!.url([port, set!.standbyPort], '?target_session_attrs=read-write'), { poolSize: 2 });
      const all = await Promise.all([
        ...Array.from({ length: 10 }, () => timed(() => queryRows(handle.db, sql`select 1`))),
        ...Array.from({ length: 3 }, (_, i) => timed(() => withTransaction(handle.db, (tx) => tx.execute(sql`insert into marks values (${100 + i})`)))),
      ]);
      for (const { ms, error } of all) {
        expect(answeredAs503(error), String(error)).toBe(true);
        expect(ms).toBeGreaterThan(BOUND_MS - 100);
        expect(ms).toBeLessThan(BOUND_MS + 600);
      }
      expect(all.filter(({ error }) => codes(error).includes('ACQUIRE_TIMEOUT')).length).toBeGreaterThanOrEqual(11);
      expect(handle.poolStats()[0]?.inFlight).toBe(0);
    } finally {
      silent.close();
      for (const socket of held) socket.destroy();
    }
  }, 15_000);

  it('answers a write refused by a standby (25006) as unavailable, drops that connection, and reports not writable', async () => {
    // A URL naming one host asks for no session attributes: a standby reached by mistake.
    const handle = await open(set!.url([set!.standbyPort]), { poolSize: 1 });
    const [before] = await queryRows<{ pid: number }>(handle.db, sql`select pg_backend_pid() as pid`);
    const error = await handle.db.execute(sql`insert into marks values (3)`).then(() => undefined, (e: unknown) => e);
    expect(answeredAs503(error), String(error)).toBe(true);
    expect(codes(error)).toContain('25006');
    const inTransaction = await withTransaction(handle.db, (tx) => tx.execute(sql`insert into marks values (4)`)).then(() => undefined, (e: unknown) => e);
    expect(isDatabaseUnavailable(inTransaction)).toBe(true);
    // The pool reconnects (after the circuit's probe interval) on a new connection.
    await expect
      .poll(async () => (await queryRows<{ pid: number }>(handle.db, sql`select pg_backend_pid() as pid`).catch(() => []))[0]?.pid ?? before?.pid, { interval: 100 })
      .not.toBe(before?.pid);
    const ping = await handle.ping();
    expect(ping).toMatchObject({ ok: false, writable: false });
  });

  it('gives up start-up after its timeout with a clear message while no primary answers', async () => {
    const waits: StartupAttempt[] = [];
    const url = set!.url([set!.standbyPort], '?target_session_attrs=read-write');
    const started = performance.now();
    const error = await open(url, { startupTimeoutMs: 1500, migrate: true, onWaiting: (a) => waits.push(a) }).then(() => undefined, (e: unknown) => e);
    expect(String(error)).toMatch(/no writable PostgreSQL primary within 2 s/);
    expect(performance.now() - started).toBeLessThan(5000);
    expect(waits.length).toBeGreaterThanOrEqual(1);
    expect(waits[0]).toMatchObject({ attempt: 1, code: 'TARGET_SESSION_ATTRS_UNMET' });
  });

  it('waits at start-up until the standby is promoted, then migrates on it', async () => {
    const waits: StartupAttempt[] = [];
    let promoted: Promise<void> | undefined;
    const url = set!.url([set!.standbyPort], '?target_session_attrs=read-write');
    const handle = await open(url, {
      startupTimeoutMs: 20_000,
      migrate: true,
      onWaiting: (attempt) => {
        waits.push(attempt);
        promoted ??= set!.promote();
      },
    });
    await promoted;
    expect(waits.length).toBeGreaterThanOrEqual(1);
    const [row] = await queryRows<{ ok: boolean }>(handle.db, sql`select to_regclass('vehicles') is not null as ok`);
    expect(row?.ok).toBe(true);
    expect((await handle.ping()).ok).toBe(true);
  });
});
