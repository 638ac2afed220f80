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

export async function ping(db: Database): Promise<{ ok: boolean; latencyMs: number; error?: string }> {
  const started = performance.now();
  try {
    await db.execute(sql`select 1`);
    return { ok: true, latencyMs: Math.round((performance.now() - started) * 100) / 100 };
  } catch (error) {
    return { ok: false, latencyMs: Math.round(performance.now() - started), error: (error as Error).message };
  }
}
