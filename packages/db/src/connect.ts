import { setTimeout as sleep } from 'node:timers/promises';
import { connectPglite } from './connect-pglite.js';
import { connectPostgres } from './connect-postgres.js';
import { DatabaseUnavailableError, isDatabaseUnavailable } from './faults.js';
import type { DatabaseHandle, DatabaseOptions } from './handle.js';
import { driverCode, driverMessage } from './health.js';
import { appSchemaName } from './migrations.js';

/** Between two start-up attempts. */
const STARTUP_RETRY_MS = 1000;

/** Gives a Drizzle database over postgres.js (with a URL) or PGlite (file or memory). */
export async function createDatabase<S extends Record<string, unknown>>(
  options: DatabaseOptions<S>,
): Promise<DatabaseHandle<S>> {
  const schemaName = appSchemaName(options.schema);
  const handle = options.url ? connectPostgres(options, options.url, schemaName) : await connectPglite(options, schemaName);
  try {
    if (handle.driver === 'postgres' && options.startupTimeoutMs !== undefined) await untilWritable(handle, options, options.startupTimeoutMs);
    else if (options.migrate) await handle.migrate();
  } catch (error) {
    await handle.close();
    throw error;
  }
  return handle;
}

/**
 * Start-up on a server: waits for a writable primary, then migrates (when asked). During a failover
 * the old primary is gone or a standby, and the new one not yet promoted: the app waits and tries
 * again (each attempt told to `onWaiting`) rather than exiting, or listening on a standby, until
 * `startupTimeoutMs`; then it fails with a message saying so. Other errors (a bad password, a
 * migration that fails) fail at once.
 */
async function untilWritable<S extends Record<string, unknown>>(handle: DatabaseHandle<S>, options: DatabaseOptions<S>, budget: number): Promise<void> {
  const started = performance.now();
  for (let attempt = 1; ; attempt++) {
    let failure: unknown;
    try {
      const state = await handle.ping();
      if (state.ok) {
        if (options.migrate) await handle.migrate();
        return;
      }
      const cause = Object.assign(new Error(state.error ?? 'no answer'), state.code ? { code: state.code } : {});
      // A standby, or no server answering, may change by waiting; a refused password will not.
      failure = state.writable === false || !state.code ? new DatabaseUnavailableError(cause) : cause;
      if (!isDatabaseUnavailable(failure)) throw failure;
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      failure = error;
    }
    const remainingMs = budget - (performance.now() - started);
    const code = driverCode(failure) ?? 'DATABASE_UNAVAILABLE';
    const message = driverMessage(failure);
    if (remainingMs <= 0) {
      throw new Error(`no writable PostgreSQL primary within ${Math.round(budget / 1000)} s (${attempt} attempts; last: ${code}: ${message})`, { cause: failure });
    }
    const retryInMs = Math.min(STARTUP_RETRY_MS, remainingMs);
    options.onWaiting?.({ attempt, code, error: message, retryInMs, remainingMs: Math.round(remainingMs) });
    await sleep(retryInMs);
  }
}
