import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import type { DatabaseHandle, DatabaseOptions } from './handle.js';
import { ping, schemaStatus } from './health.js';
import { migrateInSchema, searchPath } from './migrations.js';
import { counting, openPglite } from './pglite.js';
import type { Database } from './types.js';

/** A handle over PGlite: the instance it is given, or one it opens (and closes) itself. */
export async function connectPglite<S extends Record<string, unknown>>(options: DatabaseOptions<S>, schemaName: string | undefined): Promise<DatabaseHandle<S>> {
  const client = options.pglite ?? (await openPglite(options.dataDir ?? 'memory://', options.extensions, options.loadDataDir));
  // Every statement finds the app's tables unqualified (raw SQL, functions, new partitions).
  if (schemaName) await client.exec(`SET search_path TO ${searchPath(schemaName)}`);
  const inFlight = { count: 0, closed: false };
  // What the handle listens to, so that closing it stops listening on an instance that stays open.
  const listening = new Set<() => Promise<void>>();
  const db = drizzlePglite(counting(client, inFlight), { schema: options.schema }) as unknown as Database<S>;
  return {
    db,
    customPlanDb: db,
    driver: 'pglite',
    migrate: async () => {
      if (!schemaName) return migratePglite(db as never, { migrationsFolder: options.migrationsFolder });
      // PGlite's one connection migrates with search_path public (see migrateInSchema), then
      // goes back to the app's; one process owns the data directory, so no lock is needed.
      await client.exec('SET search_path TO public');
      try {
        await migrateInSchema(db, options.migrationsFolder, schemaName, (config) => migratePglite(db as never, config));
      } finally {
        await client.exec(`SET search_path TO ${searchPath(schemaName)}`);
      }
    },
    ping: () => ping(db),
    schemaStatus: () => schemaStatus(db, options.migrationsFolder, schemaName),
    listen: async (channel, onPayload, onListen) => {
      const unlisten = await client.listen(channel, onPayload);
      const stop = async () => {
        if (listening.delete(stop)) await unlisten();
      };
      listening.add(stop);
      onListen?.();
      return stop;
    },
    poolStats: () => [{ pool: 'main', size: null, inFlight: inFlight.count }],
    exclusive: (_name, work) => work(),
    close: async () => {
      if (!options.pglite) return client.close();
      // An instance it was given stays open: the handle stops listening and takes no more statements.
      inFlight.closed = true;
      for (const stop of [...listening]) await stop();
    },
  };
}
