import { isEntryPoint } from '@repo/config';
import { runMigrateCli } from '@repo/db';
import { openDatabase } from '../app.js';
import { loadConfig } from '../config.js';

/**
 * Brings the database's schema up to date and exits, for a migration Job that runs before a
 * rollout whose pods start with `MIGRATE_ON_START=false` (`node dist/cli/migrate.js`); the JSON
 * lines it prints and its exit code are runMigrateCli's (@repo/db).
 */
export function main(env: Record<string, string | undefined> = process.env): Promise<number> {
  return runMigrateCli({ app: 'logtracker-api', open: async () => openDatabase(loadConfig(env), { migrate: false }) });
}

// Run when executed (`node dist/cli/migrate.js`), not when imported.
if (isEntryPoint(import.meta.url)) process.exitCode = await main();
