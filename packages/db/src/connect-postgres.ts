import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { OUTAGE_OPTIONS } from './faults.js';
import { SKIPPED, type DatabaseHandle, type DatabaseOptions } from './handle.js';
import { ping, schemaStatus } from './health.js';
import { MIGRATION_LOCK, migrateInSchema, searchPath } from './migrations.js';
import { inFlightCounter, preparing, type InFlight, type ServerAnswers } from './postgres-tracking.js';
import type { Database } from './types.js';

interface Pool<S extends Record<string, unknown>> {
  client: postgres.Sql;
  max: number;
  inFlight: InFlight;
  db: Database<S>;
}

/**
 * Every pooled connection runs without JIT compilation, and without parallel workers. PostgreSQL
 * compiles a statement whose estimated cost passes jit_above_cost (100 000), and a search's generic
 * plan over a month of daily partitions costs that as soon as other projects fill the same days,
 * whatever it then reads: a search for a word no log holds read 51 buffers and took 64 ms, all but
 * a few of them compiling 197 functions, every time (the bench's growth phase, a project of 1
 * million logs beside 8 million of other projects: 104 ms p95, against 14 ms at 250 000 logs). The
 * app's statements each read a page or a count, where compiling never pays for itself. Parallel
 * workers likewise: a search whose estimate passed their threshold was planned as a Gather of two
 * workers, which took 7 ms to start for a lookup that read 49 buffers in 0.3 ms (and on two cores,
 * they take the cores the other requests need). Neither touches the migrations' own connection
 * (index builds keep their workers).
 */
const OLTP_SETTINGS = { jit: 'off', max_parallel_workers_per_gather: '0' };

/** A handle over postgres.js: the main pool, and the custom-plan one when it is asked for. */
export function connectPostgres<S extends Record<string, unknown>>(options: DatabaseOptions<S>, url: string, schemaName: string | undefined): DatabaseHandle<S> {
  // Every connection finds the app's tables unqualified (raw SQL, functions, new partitions).
  const path: Record<string, string> = schemaName ? { search_path: searchPath(schemaName) } : {};
  // What each pool's acquire bound weighs: whether the server answers any of them, or its probe.
  const answers: ServerAnswers = { succeeded: 0 };
  let prober: postgres.Sql | undefined;
  answers.probe = (withinMs) => {
    // One connection, opened when first needed and closed after a minute idle.
    prober ??= postgres(url, { ...OUTAGE_OPTIONS, ...writerOnly(url), max: 1, idle_timeout: 60, connection: { application_name: 'api-probe' } });
    return withinTime(prober`select 1`.execute(), withinMs);
  };
  const open = (max: number, settings: Record<string, string> = {}): Pool<S> => {
    const client = postgres(url, {
      max,
      ...OUTAGE_OPTIONS,
      ...writerOnly(url),
      onnotice: (notice) => options.onNotice?.(String(notice.message)),
      connection: { application_name: 'api', ...OLTP_SETTINGS, ...path, ...settings },
    });
    const inFlight = inFlightCounter(options.acquireTimeoutMs, answers);
    return { client, max, inFlight, db: drizzlePostgres(preparing(client, inFlight), { schema: options.schema }) as unknown as Database<S> };
  };
  const main = open(options.poolSize ?? 10, options.genericPlans ? { plan_cache_mode: 'force_generic_plan' } : {});
  const custom = options.customPlanPoolSize ? open(options.customPlanPoolSize, { plan_cache_mode: 'force_custom_plan' }) : undefined;
  const { db } = main;
  return {
    db,
    customPlanDb: custom?.db ?? db,
    driver: 'postgres',
    migrate: async () => {
      if (!schemaName) return migratePostgres(db as never, { migrationsFolder: options.migrationsFolder });
      await migrateOnOwnConnection(options, url, schemaName);
    },
    ping: () => ping(db, true),
    schemaStatus: () => schemaStatus(db, options.migrationsFolder, schemaName),
    listen: async (channel, onPayload, onListen) => {
      const request = await main.client.listen(channel, onPayload, onListen);
      return () => request.unlisten();
    },
    poolStats: () => [
      { pool: 'main', size: main.max, inFlight: main.inFlight.count },
      ...(custom ? [{ pool: 'custom_plan' as const, size: custom.max, inFlight: custom.inFlight.count }] : []),
    ],
    exclusive: (name, work) => underAdvisoryLock(main.client, name, work),
    close: async () => {
      await Promise.all([main.client.end({ timeout: 5 }), custom?.client.end({ timeout: 5 }), prober?.end({ timeout: 1 })]);
    },
  };
}

/** `work`, failed when it has not settled within `ms` (left to settle by itself). */
function withinTime<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  work.catch(() => undefined);
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/**
 * Migrates on one connection of its own, so that the advisory lock (a session's) covers the whole
 * run; closing it releases the lock, whatever happened.
 */
async function migrateOnOwnConnection(options: DatabaseOptions<Record<string, unknown>>, url: string, schemaName: string): Promise<void> {
  const client = postgres(url, {
    max: 1,
    ...OUTAGE_OPTIONS,
    ...writerOnly(url),
    onnotice: (notice) => options.onNotice?.(String(notice.message)),
    connection: { application_name: 'api-migrate', search_path: 'public' },
  });
  try {
    const migrator = drizzlePostgres(client) as unknown as Database;
    await migrator.execute(MIGRATION_LOCK);
    await migrateInSchema(migrator, options.migrationsFolder, schemaName, (config) => migratePostgres(migrator as never, config));
  } finally {
    await client.end({ timeout: 5 });
  }
}

/**
 * A URL naming several hosts (a primary and its standbys: pg_auto_failover, Patroni) without
 * `target_session_attrs` would take whichever answers first, a standby included, where every write
 * fails: the app only ever wants the writer, so `read-write` is the default there. A URL that says
 * otherwise is kept as it is.
 */
export function writerOnly(url: string): { target_session_attrs?: 'read-write' } {
  const hosts = url.slice(url.indexOf('://') + 3).split(/[/?]/)[0] ?? '';
  const several = hosts.slice(hosts.lastIndexOf('@') + 1).includes(',');
  return several && !/[?&]target_session_attrs=/.test(url) ? { target_session_attrs: 'read-write' } : {};
}

/** `exclusive` on postgres.js: a session-level advisory lock on a connection reserved for as long as `work` runs. */
async function underAdvisoryLock<T>(client: postgres.Sql, name: string, work: () => Promise<T>): Promise<T | typeof SKIPPED> {
  const connection = await client.reserve();
  try {
    const [lock] = await connection<{ ok: boolean }[]>`select pg_try_advisory_lock(hashtext(${name})) as ok`;
    if (!lock?.ok) return SKIPPED;
    try {
      return await work();
    } finally {
      await connection`select pg_advisory_unlock(hashtext(${name}))`;
    }
  } finally {
    connection.release();
  }
}
