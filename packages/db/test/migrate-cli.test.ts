import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { createDatabase, describeError, queryRows, runMigrateCli, sql, type DatabaseOptions } from '../src/index.js';
import { initializedPgliteDir } from '../src/testing-snapshot.js';
import { INIT_SQL, initMigrations, schema, writeMigrations } from './fixtures.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A new data directory, initialised as a first start leaves it (initdb is not what is tested here). */
async function tempDir(): Promise<string> {
  const dir = await initializedPgliteDir('migrate-cli-');
  dirs.push(dir);
  return dir;
}

/** Runs the CLI in-process; answers its exit code and the lines it wrote on each stream. */
async function run(open: () => ReturnType<typeof createDatabase>) {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const closed: string[] = [];
  const code = await runMigrateCli({
    app: 'example-api',
    async open() {
      const database = await open();
      // Seen from outside: whether the CLI closes what it opened, success or not.
      return { ...database, close: () => (closed.push('closed'), database.close()) };
    },
    stdout: { write: (line: string) => stdout.push(line) },
    stderr: { write: (line: string) => stderr.push(line) },
  });
  return { code, stdout, stderr, closed };
}

/** The tables and recorded migrations of a PGlite data directory, opened without migrating. */
async function inspect(options: Omit<DatabaseOptions<typeof schema>, 'schema'>) {
  const database = await createDatabase({ ...options, schema });
  try {
    const tables = await queryRows<{ name: string }>(
      database.db,
      sql`select table_name as name from information_schema.tables where table_schema = 'public' order by 1`,
    );
    const [record] = await queryRows<{ present: boolean }>(database.db, sql`select to_regclass('drizzle.__drizzle_migrations') is not null as present`);
    const applied = record?.present ? await queryRows(database.db, sql`select id from drizzle.__drizzle_migrations`) : [];
    return { tables: tables.map((t) => t.name), applied: applied.length };
  } finally {
    await database.close();
  }
}

describe('runMigrateCli', { timeout: 60_000 }, () => {
  it('migrates, prints one JSON summary line, closes the database and answers 0; a second run changes nothing', async () => {
    const options = { dataDir: await tempDir(), migrationsFolder: initMigrations() };
    expect(await inspect(options)).toEqual({ tables: [], applied: 0 });

    const first = await run(() => createDatabase({ ...options, schema }));

    expect(first.code, first.stderr.join('')).toBe(0);
    expect(first.stderr).toEqual([]);
    expect(first.closed).toEqual(['closed']);
    expect(first.stdout).toHaveLength(1);
    expect(first.stdout[0]).toMatch(/\n$/);
    const summary = JSON.parse(first.stdout[0]!) as Record<string, unknown>;
    expect(summary).toMatchObject({ job: 'migrate', ok: true, app: 'example-api', driver: 'pglite' });
    expect(summary.duration_ms).toEqual(expect.any(Number));
    const after = await inspect(options);
    expect(after).toEqual({ tables: ['service_logs', 'vehicles'], applied: 1 });

    const second = await run(() => createDatabase({ ...options, schema }));
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout[0]!)).toMatchObject({ job: 'migrate', ok: true, app: 'example-api' });
    expect(await inspect(options)).toEqual(after);
  });

  it('answers 1 with a JSON error line when the database cannot be opened (a bad configuration)', async () => {
    const result = await run(async () => {
      throw new Error('Invalid configuration:\n  DATABASE_URL: must be a postgres:// or postgresql:// URL');
    });

    expect(result.code).toBe(1);
    expect(result.stdout).toEqual([]);
    expect(result.stderr).toHaveLength(1);
    const error = JSON.parse(result.stderr[0]!) as Record<string, unknown>;
    expect(error).toEqual({ job: 'migrate', ok: false, app: 'example-api', error: expect.stringContaining('DATABASE_URL') });
  });

  it('answers 1 with the driver’s reason when the server cannot be reached, and closes the pool', async () => {
    // Nothing listens on port 1 of the loopback: the connection is refused at once.
    const result = await run(() => createDatabase({ url: 'postgres://nobody@127.0.0.1:1/example', schema, migrationsFolder: initMigrations() }));

    expect(result.code).toBe(1);
    expect(result.stdout).toEqual([]);
    expect(result.closed).toEqual(['closed']);
    const error = JSON.parse(result.stderr[0]!) as { ok: boolean; error: string };
    expect(error.ok).toBe(false);
    expect(error.error).toMatch(/ECONNREFUSED|connect/i);
  });

  it('answers 1 when a migration fails, leaving the schema as it was and the database closed', async () => {
    const dataDir = await tempDir();
    const migrationsFolder = writeMigrations([
      { tag: '0000_init', sql: INIT_SQL },
      { tag: '0001_broken', sql: 'SELECT * FROM "no_such_table";' },
    ]);

    const result = await run(() => createDatabase({ dataDir, schema, migrationsFolder }));

    expect(result.code).toBe(1);
    expect(result.closed).toEqual(['closed']);
    expect((JSON.parse(result.stderr[0]!) as { error: string }).error).toMatch(/no_such_table/);
    expect(await inspect({ dataDir, migrationsFolder })).toEqual({ tables: [], applied: 0 });
  });
});

describe('createDatabase({ migrate: true })', { timeout: 60_000 }, () => {
  it('answers a migrated database', async () => {
    const handle = await createDatabase({ schema, migrationsFolder: initMigrations(), migrate: true });
    try {
      expect(await queryRows(handle.db, sql`select id from drizzle.__drizzle_migrations`)).toHaveLength(1);
    } finally {
      await handle.close();
    }
  });

  it('closes the database and rejects when a migration fails', async () => {
    const dataDir = await tempDir();
    const migrationsFolder = writeMigrations([{ tag: '0000_broken', sql: 'SELECT * FROM "no_such_table";' }]);
    await expect(createDatabase({ dataDir, schema, migrationsFolder, migrate: true })).rejects.toThrow();
    // A data directory serves one process at a time: it opens again only if the first handle was closed.
    expect(await inspect({ dataDir, migrationsFolder })).toEqual({ tables: [], applied: 0 });
  });
});

describe('describeError', () => {
  it('follows the causes, at most five, trimmed', () => {
    const inner = new Error(' connect ECONNREFUSED 127.0.0.1:1 ');
    const outer = new Error('Failed query: select 1', { cause: inner });
    expect(describeError(outer)).toBe('Failed query: select 1 — caused by: connect ECONNREFUSED 127.0.0.1:1');
    let chain: unknown = 'root';
    for (let i = 0; i < 8; i++) chain = new Error(`level ${i}`, { cause: chain });
    expect(describeError(chain).split(' — caused by: ')).toEqual(['level 7', 'level 6', 'level 5', 'level 4', 'level 3']);
    expect(describeError('plain text')).toBe('plain text');
  });
});
