import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import type { SchemaStatus } from './handle.js';
import { LEGACY_MIGRATIONS, MIGRATIONS_TABLE, quoteIdent } from './migrations.js';
import { queryRows } from './queries.js';
import type { Database } from './types.js';

export async function schemaStatus(db: Database, migrationsFolder: string, schemaName: string | undefined): Promise<SchemaStatus> {
  const latest = readLatestMigration(migrationsFolder);
  const table = schemaName
    ? `${quoteIdent(schemaName)}.${quoteIdent(MIGRATIONS_TABLE)}`
    : `${LEGACY_MIGRATIONS.schema}.${LEGACY_MIGRATIONS.table}`;
  try {
    const [exists] = await queryRows<{ ok: boolean }>(db, sql`select to_regclass(${table}) is not null as ok`);
    if (!exists?.ok) return { current: false, expected: latest.tag };
    const [row] = await queryRows<{ current: boolean }>(
      db,
      sql`select exists (select 1 from ${sql.raw(table)} where created_at = ${latest.when}) as current`,
    );
    return { current: row?.current === true, expected: latest.tag };
  } catch (error) {
    return { current: false, expected: latest.tag, error: (error as Error).message };
  }
}

const latestMigrations = new Map<string, { tag: string; when: number }>();

/** The newest entry of a migrations folder's journal, read once per folder. */
function readLatestMigration(migrationsFolder: string): { tag: string; when: number } {
  let latest = latestMigrations.get(migrationsFolder);
  if (!latest) {
    const journal = JSON.parse(readFileSync(join(migrationsFolder, 'meta', '_journal.json'), 'utf8')) as { entries: { tag: string; when: number }[] };
    const last = journal.entries.at(-1);
    if (!last) throw new Error(`no migration in ${migrationsFolder}`);
    latest = { tag: last.tag, when: last.when };
    latestMigrations.set(migrationsFolder, latest);
  }
  return latest;
}

/**
 * Whether the database answers; with `writable`, whether it takes writes too: a standby (in
 * recovery, or read-only by default) answers reads, but the app cannot work on it (readiness).
 */
export async function ping(db: Database, writable = false): Promise<{ ok: boolean; latencyMs: number; error?: string; code?: string; writable?: boolean }> {
  const started = performance.now();
  try {
    if (writable) {
      const [state] = await queryRows<{ standby: boolean; read_only: string }>(
        db,
        sql`select pg_catalog.pg_is_in_recovery() as standby, current_setting('default_transaction_read_only') as read_only`,
      );
      if (state?.standby || state?.read_only === 'on') {
        return { ok: false, writable: false, code: 'NOT_WRITABLE', latencyMs: Math.round(performance.now() - started), error: 'the server is a standby or read-only: no writable primary' };
      }
    } else {
      await db.execute(sql`select 1`);
    }
    return { ok: true, latencyMs: Math.round((performance.now() - started) * 100) / 100 };
  } catch (error) {
    return { ok: false, latencyMs: Math.round(performance.now() - started), error: driverMessage(error), code: driverCode(error) };
  }
}

/** The driver's code or SQLSTATE along an error's causes (Drizzle wraps the driver's error). */
export function driverCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'DATABASE_UNAVAILABLE') return code;
  }
  return undefined;
}

/** The driver's own message (Drizzle's wrapper names the statement and its parameters instead). */
export function driverMessage(error: unknown): string {
  let message = String((error as Error | undefined)?.message ?? error);
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (typeof (e as { message?: unknown }).message === 'string') message = (e as Error).message;
  }
  return message;
}
