import { connectPglite } from './connect-pglite.js';
import { connectPostgres } from './connect-postgres.js';
import type { DatabaseHandle, DatabaseOptions } from './handle.js';
import { appSchemaName } from './migrations.js';

/** Gives a Drizzle database over postgres.js (with a URL) or PGlite (file or memory). */
export async function createDatabase<S extends Record<string, unknown>>(
  options: DatabaseOptions<S>,
): Promise<DatabaseHandle<S>> {
  const schemaName = appSchemaName(options.schema);
  const handle = options.url ? connectPostgres(options, options.url, schemaName) : await connectPglite(options, schemaName);
  if (options.migrate) {
    try {
      await handle.migrate();
    } catch (error) {
      await handle.close();
      throw error;
    }
  }
  return handle;
}
