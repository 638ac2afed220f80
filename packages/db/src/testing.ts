import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { createDatabase, type DatabaseHandle, type ExtensionName } from './index.js';

export interface TestDatabaseOptions<S extends Record<string, unknown>> {
  schema: S;
  migrationsFolder: string;
  extensions?: ExtensionName[];
  /** The server to create fresh databases on; PGlite in memory when absent. */
  serverUrl?: string;
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
  if (!serverUrl) {
    const handle = await createDatabase({ ...options, dataDir: 'memory://' });
    await handle.migrate();
    return { ...handle, destroy: () => handle.close() };
  }

  const name = `test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${name}"`);
  } finally {
    await admin.end({ timeout: 5 });
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const handle = await createDatabase({ ...options, url: url.toString(), poolSize: 5 });
  await handle.migrate();
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
export { describeMigrateCli, type MigrateCliSuiteOptions } from './testing-migrate-cli.js';
