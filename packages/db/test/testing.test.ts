import postgres from 'postgres';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { queryRows, sql } from '../src/index.js';
import { secondPass } from '../src/testing-files.js';
import { createTestDatabase, startTestApp } from '../src/testing.js';
import { initMigrations, schema, vehicles } from './fixtures.js';

const serverUrl = process.env.TEST_DATABASE_URL;

afterEach(() => {
  vi.unstubAllEnvs();
});

describe.skipIf(secondPass)('createTestDatabase without a server', { timeout: 60_000 }, () => {
  it('gives a fresh, migrated PGlite in memory when no server is named, and closes it on destroy', async () => {
    vi.stubEnv('TEST_DATABASE_URL', '');
    const handle = await createTestDatabase({ schema, migrationsFolder: initMigrations() });
    try {
      expect(handle.driver).toBe('pglite');
      expect(handle.url).toBeUndefined();
      expect(await handle.db.select().from(vehicles)).toEqual([]);
      expect(await queryRows(handle.db, sql`select id from drizzle.__drizzle_migrations`)).toHaveLength(1);
      // pg_trgm is loaded by default, so the migration's CREATE EXTENSION worked.
      expect(await queryRows(handle.db, sql`select 1 from pg_extension where extname = 'pg_trgm'`)).toHaveLength(1);
      expect(await queryRows(handle.db, sql`select current_setting('server_version_num')::int >= 150000 as modern`)).toEqual([
        { modern: true },
      ]);
      expect((await handle.ping()).ok).toBe(true);
    } finally {
      await handle.destroy();
    }
    const down = await handle.ping();
    expect(down.ok).toBe(false);
    expect(down.error).toEqual(expect.any(String));
  });
});

describe.skipIf(secondPass)('PGlite instances across test files', { timeout: 60_000 }, () => {
  const started = async (handle: { db: Parameters<typeof queryRows>[0] }) =>
    String((await queryRows<{ at: string }>(handle.db, sql`select pg_postmaster_start_time()::text as at`))[0]?.at);

  it('come back as the dump left them: rows emptied, the migrations\' rows and the sequences as they were', async () => {
    vi.stubEnv('TEST_DATABASE_URL', '');
    const first = await createTestDatabase({ schema, migrationsFolder: initMigrations() });
    const instance = await started(first);
    await first.db.insert(vehicles).values([{ name: 'Clio', plate: 'AA-1' }, { name: 'Zoe', plate: 'AA-2' }]);
    await queryRows(first.db, sql`select set_config('statement_timeout', '1234', false)`);
    await first.destroy();
    // Closed: as a closed PGlite answers, though the instance lives on.
    expect((await first.ping()).ok).toBe(false);

    const second = await createTestDatabase({ schema, migrationsFolder: initMigrations() });
    try {
      expect(await started(second)).toBe(instance);
      expect(await second.db.select().from(vehicles)).toEqual([]);
      expect(await queryRows(second.db, sql`select id from drizzle.__drizzle_migrations`)).toHaveLength(1);
      const [car] = await second.db.insert(vehicles).values({ name: 'Clio', plate: 'AA-1' }).returning();
      expect(car?.id).toBe(1);
      expect(await queryRows(second.db, sql`select current_setting('statement_timeout') as t`)).toEqual([{ t: '0' }]);
      // A test that changes the catalog: this instance is not given out again.
      await second.db.execute(sql`create table scratch (id int)`);
    } finally {
      await second.destroy();
    }
    const third = await createTestDatabase({ schema, migrationsFolder: initMigrations() });
    try {
      expect(await started(third)).not.toBe(instance);
      expect(await queryRows(third.db, sql`select to_regclass('scratch') as t`)).toEqual([{ t: null }]);
    } finally {
      await third.destroy();
    }
  });
});

// Only meaningful with a PostgreSQL server: a run without TEST_DATABASE_URL has no server to check.
if (serverUrl) {
  describe('createTestDatabase on the server of TEST_DATABASE_URL', { timeout: 60_000 }, () => {
    async function databaseExists(name: string): Promise<boolean> {
      const admin = postgres(serverUrl!, { max: 1, onnotice: () => {} });
      try {
        const rows = await admin`select 1 from pg_database where datname = ${name}`;
        return rows.length === 1;
      } finally {
        await admin.end({ timeout: 5 });
      }
    }

    it('creates a fresh database per call, usable from its URL, and drops it on destroy', async () => {
      const handle = await createTestDatabase({ schema, migrationsFolder: initMigrations() });
      const other = await createTestDatabase({ schema, migrationsFolder: initMigrations() });
      const name = new URL(handle.url!).pathname.slice(1);
      try {
        expect(handle.driver).toBe('postgres');
        expect(name).toMatch(/^test_[0-9a-z]+_[0-9a-f]{8}$/);
        expect(new URL(handle.url!).host).toBe(new URL(serverUrl!).host);
        expect(other.url).not.toBe(handle.url);
        expect(await databaseExists(name)).toBe(true);
        expect(await queryRows(handle.db, sql`select id from drizzle.__drizzle_migrations`)).toHaveLength(1);

        await handle.db.insert(vehicles).values({ name: 'Shared', plate: 'S-1' });
        expect(await other.db.select().from(vehicles)).toEqual([]);
        // Code that opens its own connection from the URL sees the same migrated database.
        const own = postgres(handle.url!, { max: 1, onnotice: () => {} });
        try {
          expect([...(await own`select name from vehicles`)]).toEqual([{ name: 'Shared' }]);
        } finally {
          await own.end({ timeout: 5 });
        }
      } finally {
        await handle.destroy();
        await other.destroy();
      }
      expect(await databaseExists(name)).toBe(false);
      expect((await handle.ping()).ok).toBe(false);
    });

    it('prefers an explicit serverUrl over the environment', async () => {
      vi.stubEnv('TEST_DATABASE_URL', 'postgres://nobody:nothing@127.0.0.1:1/none');
      const handle = await createTestDatabase({ schema, migrationsFolder: initMigrations(), serverUrl });
      try {
        expect(handle.driver).toBe('postgres');
        expect((await handle.ping()).ok).toBe(true);
      } finally {
        await handle.destroy();
      }
    });
  });
}

describe('startTestApp', { timeout: 60_000 }, () => {
  /** An app in the shape the services take: built over a database it does not own, made ready, then closed. */
  function fakeApp(database: { db: unknown }, events: string[], failReady = false) {
    return {
      database,
      async ready() {
        events.push('ready');
        if (failReady) throw new Error('plugin failed to load');
      },
      async close() {
        events.push('app closed');
      },
    };
  }

  it('builds the app over a fresh migrated database with the parsed config, ready; close closes the app then the database', async () => {
    const events: string[] = [];
    const t = await startTestApp({
      database: { schema, migrationsFolder: initMigrations() },
      config: () => ({ name: 'example', limit: 3 }),
      build: async (config, database) => {
        events.push(`built with ${config.name}`);
        return fakeApp(database, events);
      },
    });

    expect(events).toEqual(['built with example', 'ready']);
    expect(t.config).toEqual({ name: 'example', limit: 3 });
    expect(t.app.database).toBe(t.database);
    expect(await t.database.db.select().from(vehicles)).toEqual([]);

    await t.close();
    expect(events.at(-1)).toBe('app closed');
    expect((await t.database.ping()).ok).toBe(false);
  });

  it('closes what it opened and rethrows when the configuration, the build or ready fails', async () => {
    const opened: { ping(): Promise<{ ok: boolean }> }[] = [];
    const database = { schema, migrationsFolder: initMigrations() };

    await expect(
      startTestApp({
        database,
        config: () => {
          throw new Error('Invalid configuration');
        },
        build: async (_config, db) => (opened.push(db), fakeApp(db, [])),
      }),
    ).rejects.toThrow('Invalid configuration');
    expect(opened).toEqual([]);

    await expect(
      startTestApp({
        database,
        config: () => ({}),
        build: async (_config, db) => {
          opened.push(db);
          throw new Error('no such plugin');
        },
      }),
    ).rejects.toThrow('no such plugin');

    const events: string[] = [];
    await expect(
      startTestApp({ database, config: () => ({}), build: async (_config, db) => (opened.push(db), fakeApp(db, events, true)) }),
    ).rejects.toThrow('plugin failed to load');
    expect(events).toEqual(['ready', 'app closed']);

    expect(opened).toHaveLength(2);
    for (const db of opened) expect((await db.ping()).ok).toBe(false);
  });
});
