import { is, sql } from 'drizzle-orm';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import { PgSchema } from 'drizzle-orm/pg-core';
import { arrayLiteral, queryRows } from './queries.js';
import type { Database } from './types.js';

/**
 * The PostgreSQL schema an app keeps its tables and its migrations table in: the one `pgSchema`
 * its drizzle schema exports (drizzle-kit qualifies its tables with it). Two apps, each in a
 * schema of its own, then share one database, or keep one each, alike. Without one, the tables
 * live in public and the history in `drizzle.__drizzle_migrations`, as drizzle does by default.
 */
export function appSchemaName(schema: Record<string, unknown>): string | undefined {
  const names = new Set(Object.values(schema).filter((value) => is(value, PgSchema)).map((value) => (value as PgSchema).schemaName));
  if (names.size > 1) throw new Error(`a drizzle schema may export one pgSchema, found: ${[...names].join(', ')}`);
  return [...names][0];
}

/** drizzle's own migrations table, where the history of an app without a schema of its own lives. */
export const LEGACY_MIGRATIONS = { schema: 'drizzle', table: '__drizzle_migrations' };
export const MIGRATIONS_TABLE = '__drizzle_migrations';

/**
 * Taken around every migration run, whichever app: two apps (or two replicas) migrating one fresh
 * database at once would otherwise both build their earlier migrations in public, and collide there.
 */
export const MIGRATION_LOCK = sql`select pg_advisory_lock(hashtext('repo.migrations'))`;

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** The connections' search_path: the app's tables first, then public, where the extensions live. */
export function searchPath(schemaName: string): string {
  return `${quoteIdent(schemaName)}, public`;
}

/**
 * Migrates with the app's history in its own schema. The migrations run with search_path public,
 * as they always have: the earlier ones create their tables there (their foreign keys name
 * "public") and the app's schema migration moves them. A database migrated before the apps had
 * schemas of their own keeps its history in drizzle's shared table: the rows of this app's
 * migrations (matched by their creation time in the journal) are carried over first, once, so
 * that only the newer migrations run.
 */
export async function migrateInSchema(db: Database, migrationsFolder: string, schemaName: string, run: (config: { migrationsFolder: string; migrationsSchema: string; migrationsTable: string }) => Promise<void>) {
  const ours = readMigrationFiles({ migrationsFolder }).map((m) => m.folderMillis);
  const target = `${quoteIdent(schemaName)}.${quoteIdent(MIGRATIONS_TABLE)}`;
  const [found] = await queryRows<{ own: boolean; legacy: boolean }>(
    db,
    sql`select to_regclass(${target}) is not null as own, to_regclass('drizzle.__drizzle_migrations') is not null as legacy`,
  );
  if (found && !found.own && found.legacy) {
    await db.transaction(async (tx) => {
      await tx.execute(sql.raw(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schemaName)}`));
      // The same table drizzle's migrator creates.
      await tx.execute(sql.raw(`CREATE TABLE ${target} (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)`));
      await tx.execute(
        sql`insert into ${sql.raw(target)} (hash, created_at)
            select hash, created_at from drizzle.__drizzle_migrations
            where created_at = any(${arrayLiteral(ours)}::bigint[]) order by id`,
      );
    });
  }
  await run({ migrationsFolder, migrationsSchema: schemaName, migrationsTable: MIGRATIONS_TABLE });
}
