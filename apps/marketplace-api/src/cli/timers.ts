import { isEntryPoint } from '@repo/config';
import { openDatabase } from '../app.js';
import { loadConfig } from '../config.js';
import { createActivityRecorder } from '../modules/activity-log/index.js';
import { createLifecycleTimersService, type TimerName, TIMERS } from '../modules/booking/index.js';
import { createOutbox } from '../modules/outbox/index.js';
import { createSettingsService } from '../modules/settings/index.js';

const USAGE = `usage: node dist/cli/timers.js [${[...TIMERS, 'all'].join('|')}]`;

/**
 * One pass of the lifecycle timers, for a cron job when the app's own schedule is off
 * (`LIFECYCLE_TIMERS_INTERVAL_SECONDS=0`): `node dist/cli/timers.js [request-expiry|offer-expiry|auto-complete|all]`
 * prints `{"job":"timers","ok":true,"moved":{…}}` on stdout (the ids moved, by timer) and answers 0,
 * or prints `{"job":"timers","ok":false,"error":…}` on stderr and answers 1 (2 for an unknown timer).
 * It opens the database as the app does (migrations included unless MIGRATE_ON_START=false). Safe
 * beside running apps on PostgreSQL: the timers claim their rows. With PGlite, run it only while
 * the app is stopped: a data directory serves one process at a time.
 */
export async function main(argv: string[] = process.argv.slice(2), env: Record<string, string | undefined> = process.env): Promise<number> {
  const which = argv[0] ?? 'all';
  if (argv.length > 1 || (which !== 'all' && !(TIMERS as readonly string[]).includes(which))) {
    process.stderr.write(`${JSON.stringify({ job: 'timers', ok: false, error: USAGE })}\n`);
    return 2;
  }
  const names: readonly TimerName[] = which === 'all' ? TIMERS : [which as TimerName];
  const started = Date.now();
  try {
    const database = await openDatabase(loadConfig(env));
    try {
      const { db } = database;
      const recorder = createActivityRecorder({ db });
      const timers = createLifecycleTimersService({ db, recorder, outbox: createOutbox({ db }), settings: createSettingsService({ db, recorder }) });
      const moved = await timers.run(names);
      process.stdout.write(`${JSON.stringify({ job: 'timers', ok: true, timers: names, moved, duration_ms: Date.now() - started })}\n`);
      return 0;
    } finally {
      await database.close();
    }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`${JSON.stringify({ job: 'timers', ok: false, error: message })}\n`);
    return 1;
  }
}

// Run when executed (`node dist/cli/timers.js`), not when imported (tests call `main`).
if (isEntryPoint(import.meta.url)) process.exitCode = await main();
