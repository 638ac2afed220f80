import { isEntryPoint } from '@repo/config';
import { openDatabase } from '../app.js';
import { loadConfig } from '../config.js';
import { createMaintenanceJob } from '../jobs/maintenance.js';
import { createRetentionJob, type JobLogger } from '../jobs/retention.js';

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];

/** JSON lines on stderr, pino's shape, so that stdout carries the summary alone. */
function stderrLogger(level: string): JobLogger {
  const threshold = level === 'silent' ? Infinity : LEVELS.indexOf(level);
  const at = (name: string) => (obj: object, msg?: string) => {
    if (LEVELS.indexOf(name) < threshold) return;
    const fields = Object.fromEntries(
      Object.entries(obj).map(([k, v]) => [k, v instanceof Error ? { type: v.name, message: v.message } : v]),
    );
    process.stderr.write(`${JSON.stringify({ level: name, time: Date.now(), name: 'retention', ...fields, msg })}\n`);
  };
  return { info: at('info'), error: at('error') };
}

/**
 * One retention run, for a cron job (a Kubernetes CronJob with `node dist/cli/retention.js`):
 * prints `{"job":"retention","ok":true,"deleted":…,"projects":…,"duration_ms":…}` on stdout and
 * answers 0, or prints `{"job":"retention","ok":false,"error":…}` on stderr and answers 1.
 * It opens the database as the app does (migrations included). With PGlite, run it only while the
 * app is stopped: a data directory serves one process at a time.
 */
export async function main(env: Record<string, string | undefined> = process.env): Promise<number> {
  const started = Date.now();
  try {
    const config = loadConfig(env);
    const database = await openDatabase(config);
    try {
      const job = createRetentionJob({
        db: database.customPlanDb,
        logger: stderrLogger(config.logLevel),
        batchSize: config.retention.batchSize,
        pauseMs: config.retention.pauseMs,
        exclusive: database.exclusive,
      });
      const result = await job.runOnce();
      // The cron job is also the place for storage upkeep when the app's own schedule is off.
      const maintenance = await createMaintenanceJob({
        db: database.customPlanDb,
        logger: stderrLogger(config.logLevel),
        exclusive: database.exclusive,
      }).runOnce();
      const summary = {
        job: 'retention',
        ok: true,
        deleted: result.deleted,
        projects: result.projects,
        batches: result.batches,
        partitions_emptied: result.partitionsEmptied,
        partitions_dropped: result.partitionsDropped,
        partitions_created: maintenance.partitionsCreated,
        // Another instance (the app's own schedule, an overlapping run) held the job: nothing done here.
        skipped: result.skipped === true,
        duration_ms: Date.now() - started,
      };
      process.stdout.write(`${JSON.stringify(summary)}\n`);
      return 0;
    } finally {
      await database.close();
    }
  } catch (error) {
    // A configuration error's message lists the bad variables; anything else is reported as it is.
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`${JSON.stringify({ job: 'retention', ok: false, error: message })}\n`);
    return 1;
  }
}

// Run when executed (`node dist/cli/retention.js`), not when imported (tests call `main`).
if (isEntryPoint(import.meta.url)) process.exitCode = await main();
