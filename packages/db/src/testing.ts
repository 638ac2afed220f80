import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { createDatabase } from './connect.js';
import type { DatabaseHandle } from './handle.js';
import type { ExtensionName } from './pglite.js';
import { givePglite, takePglite } from './testing-pglite-pool.js';
import { pgliteSnapshot, postgresTemplate, snapshotKey } from './testing-snapshot.js';

export interface TestDatabaseOptions<S extends Record<string, unknown>> {
  schema: S;
  migrationsFolder: string;
  extensions?: ExtensionName[];
  /** The server to create fresh databases on; PGlite in memory when absent. */
  serverUrl?: string;
  /** As DatabaseOptions.customPlanPoolSize (on a server only). */
  customPlanPoolSize?: number;
  /** As DatabaseOptions.genericPlans (on a server only). */
  genericPlans?: boolean;
  /** As DatabaseOptions.acquireTimeoutMs (on a server only). */
  acquireTimeoutMs?: number;
  /** Whether to migrate the fresh database (default true); false leaves it empty, as a Job would find it. */
  migrate?: boolean;
}

export interface TestDatabase<S extends Record<string, unknown>> extends DatabaseHandle<S> {
  /** The URL of the fresh server database, for code that opens its own connection. */
  url?: string;
  /** Closes the connection and drops the database it created. */
  destroy(): Promise<void>;
}

/**
 * A fresh, migrated database for one test file: PGlite in memory by default, or a new database on
 * the PostgreSQL server named by `TEST_DATABASE_URL` (dropped again by `destroy`).
 */
export async function createTestDatabase<S extends Record<string, unknown>>(
  options: TestDatabaseOptions<S>,
): Promise<TestDatabase<S>> {
  // Test-only entry point: the suite switches servers through this one variable.
  const serverUrl = options.serverUrl ?? process.env.TEST_DATABASE_URL;
  const migrate = options.migrate !== false;
  if (!serverUrl) {
    // A copy of one migrated (or empty) data directory, dumped once: initdb and the migrations
    // cost seconds per file on PGlite, loading the dump about one; an instance an earlier file of
    // the worker gave back, put back as the dump left it, costs a few dozen milliseconds.
    const source = { ...options, migrate };
    // The instance's extensions are loaded when it starts: instances are kept per dump and extensions.
    const key = `${snapshotKey(source)}:${[...(options.extensions ?? [])].sort().join(',')}`;
    const pglite = await takePglite(key, options.extensions, () => pgliteSnapshot(source));
    const handle = await createDatabase({ ...options, dataDir: 'memory://', migrate: false, pglite });
    let destroyed: Promise<void> | undefined;
    return {
      ...handle,
      // Closing the handle leaves the instance open; destroying it gives the instance back (once).
      destroy: () => (destroyed ??= handle.close().then(() => givePglite(key, pglite))),
    };
  }

  // A copy of a template database migrated once on the server (an empty database is template1's copy).
  const template = migrate ? await postgresTemplate(serverUrl, { ...options, migrate }) : undefined;
  const name = `test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  try {
    // From PostgreSQL 15 a copy is written to the WAL block by block unless told otherwise; copied as
    // files it costs a third less (about 170 ms against 280 ms for the marketplace's template here,
    // on a server that does not fsync, as the tests' is).
    const [version] = await admin<{ n: number }[]>`select current_setting('server_version_num')::int as n`;
    const strategy = (version?.n ?? 0) >= 150000 ? ' strategy file_copy' : '';
    await admin.unsafe(template ? `create database "${name}" template "${template}"${strategy}` : `create database "${name}"`);
  } finally {
    await admin.end({ timeout: 5 });
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const handle = await createDatabase({ ...options, url: url.toString(), poolSize: 5, migrate: false });
  return {
    ...handle,
    url: url.toString(),
    async destroy() {
      await handle.close();
      const cleanup = postgres(serverUrl, { max: 1, onnotice: () => {} });
      try {
        await cleanup.unsafe(`drop database if exists "${name}" with (force)`);
      } finally {
        await cleanup.end({ timeout: 5 });
      }
    },
  };
}
/**
 * Migrates a database as the apps did before each kept its tables in a schema of its own: drizzle's
 * defaults (tables in public, history in `drizzle.__drizzle_migrations`), with the folder's
 * migrations before the one tagged `before`. For tests of the upgrade path.
 */
export async function migrateAsBefore(options: {
  migrationsFolder: string;
  before: string;
  extensions?: ExtensionName[];
  url?: string;
  dataDir?: string;
}): Promise<void> {
  const folder = mkdtempSync(join(tmpdir(), 'migrations-'));
  try {
    cpSync(options.migrationsFolder, folder, { recursive: true });
    const journalPath = join(folder, 'meta', '_journal.json');
    const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: { tag: string }[] };
    const cut = journal.entries.findIndex((entry) => entry.tag === options.before);
    if (cut < 0) throw new Error(`no migration tagged ${options.before}`);
    writeFileSync(journalPath, JSON.stringify({ ...journal, entries: journal.entries.slice(0, cut) }));
    // A schema that exports no pgSchema migrates the way drizzle does by default.
    const handle = await createDatabase({ url: options.url, dataDir: options.dataDir, extensions: options.extensions, schema: {}, migrationsFolder: folder, migrate: true });
    await handle.close();
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

export { describeMigrateCli, type MigrateCliSuiteOptions } from './testing-migrate-cli.js';
export { initializedPgliteDir } from './testing-snapshot.js';

/** What an app's test gets: the app, ready, over a database of its own, and one call to close both. */
export interface TestApp<A, S extends Record<string, unknown>, C> {
  app: A;
  database: TestDatabase<S>;
  config: Readonly<C>;
  close(): Promise<void>;
}

export interface StartTestAppOptions<A, S extends Record<string, unknown>, C> {
  /** The app's schema, migrations and extensions. */
  database: TestDatabaseOptions<S>;
  /** The app's configuration for the test, parsed the way the app parses it. */
  config(): C;
  /** Builds the app (never listening) over the test's database, which the test owns. */
  build(config: Readonly<C>, database: TestDatabase<S>): Promise<A>;
}

/**
 * An app over a fresh, migrated database of its own (PGlite in memory, or a new database on the
 * server named by TEST_DATABASE_URL), ready for `inject`. `close` closes the app, then drops the
 * database; a failure while building drops it at once.
 */
export async function startTestApp<A extends { ready(): PromiseLike<unknown>; close(): PromiseLike<unknown> }, S extends Record<string, unknown>, C>(
  options: StartTestAppOptions<A, S, C>,
): Promise<TestApp<A, S, C>> {
  const database = await createTestDatabase(options.database);
  let app: A | undefined;
  let config: Readonly<C>;
  try {
    config = options.config();
    app = await options.build(config, database);
    await app.ready();
  } catch (error) {
    await app?.close();
    await database.destroy();
    throw error;
  }
  const built = app;
  return {
    app: built,
    database,
    config,
    async close() {
      await built.close();
      await database.destroy();
    },
  };
}
