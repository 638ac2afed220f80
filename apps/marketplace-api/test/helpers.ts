import { createTestDatabase, type TestDatabase } from '@repo/db/testing';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { loadConfig, type Config } from '../src/config.js';
import { migrationsFolder, schema, type Schema } from '../src/db/index.js';

export interface TestApp {
  app: FastifyInstance;
  database: TestDatabase<Schema>;
  config: Readonly<Config>;
  close(): Promise<void>;
}

/** The app over a fresh, migrated database of its own (PGlite in memory or TEST_DATABASE_URL's server). */
export async function buildTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  const database = await createTestDatabase({ schema, migrationsFolder, extensions: ['pg_trgm', 'btree_gist'] });
  const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', DATA_DIR: 'memory://', ...env });
  const app = await buildApp(config, { database });
  await app.ready();
  return {
    app,
    database,
    config,
    async close() {
      await app.close();
      await database.destroy();
    },
  };
}
