/**
 * The migrate CLI's suite as an app runs it: its built `dist/cli/migrate.js` in a child process,
 * over its own migrations and configuration, and its `migrate` package script. Test-only: it
 * declares vitest tests, so only a test file calls it.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { getTableName, is, sql } from 'drizzle-orm';
import { PgTable } from 'drizzle-orm/pg-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseHandle } from './handle.js';
import { appSchemaName } from './migrations.js';
import { queryRows } from './queries.js';
import { builtCli, runNode } from './testing-files.js';
import { initializedPgliteDir } from './testing-snapshot.js';

type Env = Record<string, string>;

export interface MigrateCliSuiteOptions {
  /** The name the CLI prints as `app`. */
  app: string;
  /** The app's folder: its package.json, drizzle/ migrations, src/ and dist/. */
  appDir: string;
  /** The app's drizzle schema: every table in it must exist once the CLI has run. */
  schema: Record<string, unknown>;
  /** The app's configuration parser (`MIGRATE_ON_START` → `migrateOnStart`). */
  loadConfig(env: Env): { migrateOnStart: boolean };
  /** Opens the app's database from an environment, as the app does, without migrating it. */
  open(env: Env): Promise<Pick<DatabaseHandle<Record<string, unknown>>, 'db' | 'close'>>;
  /** What else the app's configuration requires with NODE_ENV=production (secrets, SMTP_URL). */
  productionEnv: Env;
}

export function describeMigrateCli(options: MigrateCliSuiteOptions): void {
  const { app, appDir } = options;

  /** Every table the schema declares: all of them must exist once the migrations have run. */
  const schemaTables = Object.values(options.schema)
    .flatMap((value) => (is(value, PgTable) ? [getTableName(value)] : []))
    .sort();

  /** The migrations drizzle-kit generated, as listed in the journal the migrator reads. */
  const journalEntries = (JSON.parse(readFileSync(join(appDir, 'drizzle', 'meta', '_journal.json'), 'utf8')) as { entries: unknown[] }).entries
    .length;

  describe('migration configuration', () => {
    const base = { NODE_ENV: 'development', DATA_DIR: 'memory://' };

    it('migrates at start-up by default, not with MIGRATE_ON_START=false, and refuses nonsense', () => {
      expect(options.loadConfig(base).migrateOnStart).toBe(true);
      expect(options.loadConfig({ ...base, MIGRATE_ON_START: 'true' }).migrateOnStart).toBe(true);
      expect(options.loadConfig({ ...base, MIGRATE_ON_START: 'false' }).migrateOnStart).toBe(false);
      expect(options.loadConfig({ ...base, MIGRATE_ON_START: '0' }).migrateOnStart).toBe(false);
      expect(() => options.loadConfig({ ...base, MIGRATE_ON_START: 'later' })).toThrow(/MIGRATE_ON_START/);
    });
  });

  describe('migrate CLI (node dist/cli/migrate.js)', () => {
    const cli = join(appDir, 'dist', 'cli', 'migrate.js');
    let dataDir: string;

    /** The tables of the data directory and the migrations recorded there, opened without migrating. */
    async function inspect(env: Env) {
      const database = await options.open({ ...env, MIGRATE_ON_START: 'false' });
      try {
        // The app's own schema and migrations table when it has one, drizzle's defaults otherwise.
        const own = appSchemaName(options.schema);
        const history = own ? `"${own}".__drizzle_migrations` : 'drizzle.__drizzle_migrations';
        const tables = await queryRows<{ name: string }>(
          database.db,
          sql`select table_name as name from information_schema.tables where table_schema = ${own ?? 'public'} and table_name <> '__drizzle_migrations' order by 1`,
        );
        // drizzle's record of the migrations it applied, absent until the first run.
        const [record] = await queryRows<{ present: boolean }>(database.db, sql`select to_regclass(${history}) is not null as present`);
        let applied = 0;
        if (record?.present) {
          const [row] = await queryRows<{ n: number }>(database.db, sql`select count(*)::int as n from ${sql.raw(history)}`);
          applied = Number(row?.n ?? 0);
        }
        return { tables: tables.map((t) => t.name), applied };
      } finally {
        await database.close();
      }
    }

    beforeAll(async () => {
      await builtCli(appDir, 'migrate');
      dataDir = await initializedPgliteDir('migrate-cli-');
    }, 120_000);
    afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

    it('leaves a fresh database unmigrated when the app opens it with MIGRATE_ON_START=false', async () => {
      expect(await inspect({ NODE_ENV: 'development', DATA_DIR: dataDir })).toEqual({ tables: [], applied: 0 });
    });

    it('migrates a PGlite data directory, prints a JSON summary and exits 0', async () => {
      // The Job shares the app's environment, MIGRATE_ON_START=false included: the command migrates all the same.
      const env = { NODE_ENV: 'development', DATA_DIR: dataDir, MIGRATE_ON_START: 'false' };

      const result = await runNode(appDir, [cli], env);

      expect(result.code, result.stderr).toBe(0);
      const lines = result.stdout.trim().split('\n');
      expect(lines).toHaveLength(1);
      const summary = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
      expect(summary).toMatchObject({ job: 'migrate', ok: true, app, driver: 'pglite' });
      expect(typeof summary.duration_ms).toBe('number');

      const after = await inspect(env);
      expect(schemaTables.length).toBeGreaterThan(5);
      expect(after.tables).toEqual(expect.arrayContaining(schemaTables));
      expect(after.applied).toBe(journalEntries);
      // A second run changing nothing is runMigrateCli's, proven once in @repo/db's own tests.
    });

    it('exits 1 with a JSON error line when the configuration is bad', async () => {
      const result = await runNode(appDir, [cli], { NODE_ENV: 'development', DATA_DIR: dataDir, DATABASE_URL: `mysql://db/${app}` });

      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      const error = JSON.parse(result.stderr.trim()) as { job: string; ok: boolean; app: string; error: string };
      expect(error).toMatchObject({ job: 'migrate', ok: false, app });
      expect(error.error).toContain('DATABASE_URL');
    });

    it('exits 1 with a JSON error line when the database server cannot be reached', async () => {
      // Nothing listens on port 1 of the loopback: the connection is refused at once.
      const result = await runNode(appDir, [cli], {
        ...options.productionEnv,
        NODE_ENV: 'production',
        DATABASE_URL: `postgres://nobody@127.0.0.1:1/${app}`,
        // Without it the CLI waits (60 s by default) for a primary to appear, as in a failover.
        DATABASE_STARTUP_TIMEOUT_SECONDS: '0',
      });

      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      const error = JSON.parse(result.stderr.trim()) as { job: string; ok: boolean; error: string };
      expect(error).toMatchObject({ job: 'migrate', ok: false, app });
      expect(error.error).toMatch(/ECONNREFUSED|connect/i);
      expect(error.error).toMatch(/no writable PostgreSQL primary within 0 s/);
    });

    it('is the package script `migrate`', () => {
      const pkg = JSON.parse(readFileSync(join(appDir, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
      expect(pkg.scripts.migrate).toBe('node dist/cli/migrate.js');
    });
  });
}
