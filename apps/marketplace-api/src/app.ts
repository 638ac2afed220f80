import { createDatabase, type DatabaseHandle } from '@repo/db';
import { createServer, healthRoutes, registerFoundation, type ServerOptions } from '@repo/http';
import type { Config } from './config.js';
import { migrationsFolder, schema, type Schema } from './db/index.js';

export const VERSION = '1.0.0';

export interface AppOverrides {
  /** A database the caller owns (tests); otherwise one is opened from the config and closed with the app. */
  database?: DatabaseHandle<Schema>;
  logger?: ServerOptions['logger'];
}

export async function openDatabase(config: Readonly<Config>) {
  const database = await createDatabase({
    url: config.database.url,
    dataDir: config.database.dataDir,
    poolSize: config.database.poolSize,
    schema,
    migrationsFolder,
    extensions: ['pg_trgm', 'btree_gist'],
  });
  await database.migrate();
  return database;
}

/** Builds the marketplace; never listens, so tests drive it with `inject`. */
export async function buildApp(config: Readonly<Config>, overrides: AppOverrides = {}) {
  const app = createServer({ logLevel: config.logLevel, trustProxy: config.trustProxy, logger: overrides.logger });

  const database = overrides.database ?? (await openDatabase(config));
  if (!overrides.database) app.addHook('onClose', () => database.close());

  await registerFoundation(app, {
    cors: config.cors,
    rateLimit: config.rateLimit,
    docs: {
      title: 'Automotive Services Marketplace API',
      description:
        'Vehicle owners post service requests, providers send offers, appointments, payments, reviews and conversations.',
      version: VERSION,
      prefix: '/docs',
      tags: [{ name: 'health', description: 'Health' }],
    },
  });

  await app.register(
    async (api) => {
      await api.register(healthRoutes({ version: VERSION, driver: database.driver, ping: database.ping }));
    },
    { prefix: '/api/v1' },
  );
  return app;
}
