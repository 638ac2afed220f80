import type { DatabaseHandle } from './handle.js';

export interface MigrateCliOptions {
  /** The app's name, printed in the summary so that a Job's log says which schema moved. */
  app: string;
  /**
   * Opens the app's database from its configuration WITHOUT migrating it (a configuration error
   * throws). The CLI migrates it itself whatever `MIGRATE_ON_START` says.
   */
  open(): Promise<Pick<DatabaseHandle<Record<string, unknown>>, 'driver' | 'migrate' | 'close'>>;
  /** Where the summary and the error line go; the process's streams by default. */
  stdout?: { write(line: string): unknown };
  stderr?: { write(line: string): unknown };
}

/**
 * Brings an app's database schema up to date, for a migration Job that runs before a rollout whose
 * pods start with `MIGRATE_ON_START=false`. Prints
 * `{"job":"migrate","ok":true,"app":…,"driver":…,"duration_ms":…}` on stdout and answers 0, or
 * prints `{"job":"migrate","ok":false,"app":…,"error":…}` on stderr and answers 1. Migrations
 * already applied are skipped, so a second run changes nothing. With PGlite, run it only while
 * the app is stopped: a data directory serves one process at a time.
 */
export async function runMigrateCli(options: MigrateCliOptions): Promise<number> {
  const stdout = options.stdout ?? process.stdout;
  const stderr = options.stderr ?? process.stderr;
  const started = Date.now();
  try {
    // Opened without migrating, then migrated here, so that a failed migration still closes the
    // connections (an open pool would keep the Job's pod running).
    const database = await options.open();
    try {
      await database.migrate();
    } finally {
      await database.close();
    }
    stdout.write(`${JSON.stringify({ job: 'migrate', ok: true, app: options.app, driver: database.driver, duration_ms: Date.now() - started })}\n`);
    return 0;
  } catch (error) {
    stderr.write(`${JSON.stringify({ job: 'migrate', ok: false, app: options.app, error: describeError(error) })}\n`);
    return 1;
  }
}

/**
 * One line for an operator. A configuration error's message lists the bad variables. A failed
 * statement is drizzle's "Failed query: …" around the driver's error, whose message (a refused
 * connection, a permission) is the one an operator needs, so the causes are followed.
 */
export function describeError(error: unknown): string {
  const messages: string[] = [];
  for (let e: unknown = error; e !== undefined && messages.length < 5; e = e instanceof Error ? e.cause : undefined) {
    messages.push(e instanceof Error ? e.message.trim() : String(e));
  }
  return messages.join(' — caused by: ');
}
