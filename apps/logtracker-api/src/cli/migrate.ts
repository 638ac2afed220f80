import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { openDatabase } from '../app.js';
import { loadConfig } from '../config.js';

const APP = 'logtracker-api';

/**
 * Brings the database's schema up to date and exits, for a migration Job that runs before a
 * rollout whose pods start with `MIGRATE_ON_START=false` (`node dist/cli/migrate.js`). Prints
 * `{"job":"migrate","ok":true,"app":…,"driver":…,"duration_ms":…}` on stdout and answers 0, or
 * prints `{"job":"migrate","ok":false,"app":…,"error":…}` on stderr and answers 1. Migrations
 * already applied are skipped, so a second run changes nothing. With PGlite, run it only while
 * the app is stopped: a data directory serves one process at a time.
 */
export async function main(env: Record<string, string | undefined> = process.env): Promise<number> {
  const started = Date.now();
  try {
    const config = loadConfig(env);
    // Opened without migrating, then migrated here whatever MIGRATE_ON_START says, so that a failed
    // migration still closes the connections (an open pool would keep the Job's pod running).
    const database = await openDatabase(config, { migrate: false });
    try {
      await database.migrate();
    } finally {
      await database.close();
    }
    process.stdout.write(
      `${JSON.stringify({ job: 'migrate', ok: true, app: APP, driver: database.driver, duration_ms: Date.now() - started })}\n`,
    );
    return 0;
  } catch (error) {
    process.stderr.write(`${JSON.stringify({ job: 'migrate', ok: false, app: APP, error: describeError(error) })}\n`);
    return 1;
  }
}

/**
 * A configuration error's message lists the bad variables. A failed statement is drizzle's
 * "Failed query: …" around the driver's error, whose message (a refused connection, a permission)
 * is the one an operator needs, so the causes are followed.
 */
function describeError(error: unknown): string {
  const messages: string[] = [];
  for (let e: unknown = error; e !== undefined && messages.length < 5; e = e instanceof Error ? e.cause : undefined) {
    messages.push(e instanceof Error ? e.message.trim() : String(e));
  }
  return messages.join(' — caused by: ');
}

function executedDirectly(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return realpathSync(entry) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
}

// Run when executed (`node dist/cli/migrate.js`), not when imported.
if (executedDirectly()) process.exitCode = await main();
