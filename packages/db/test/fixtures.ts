import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { index, integer, pgTable, serial, text, timestamp } from 'drizzle-orm/pg-core';

/** A tiny schema in the shape the apps' schemas take. */
export const vehicles = pgTable(
  'vehicles',
  {
    id: serial('id').primaryKey(),
    name: text('name').notNull(),
    plate: text('plate').notNull().unique(),
    createdAt: timestamp('created_at', { withTimezone: true }).defaultNow().notNull(),
  },
  (t) => [index('vehicles_name_trgm').using('gin', t.name.op('gin_trgm_ops'))],
);

export const serviceLogs = pgTable('service_logs', {
  id: serial('id').primaryKey(),
  vehicleId: integer('vehicle_id')
    .notNull()
    .references(() => vehicles.id, { onDelete: 'cascade' }),
  note: text('note').notNull(),
});

export const schema = { vehicles, serviceLogs };

/** What drizzle-kit generates for the schema above: one statement per breakpoint. */
export const INIT_SQL = [
  'CREATE EXTENSION IF NOT EXISTS pg_trgm;',
  `CREATE TABLE "vehicles" (
\t"id" serial PRIMARY KEY NOT NULL,
\t"name" text NOT NULL,
\t"plate" text NOT NULL,
\t"created_at" timestamp with time zone DEFAULT now() NOT NULL,
\tCONSTRAINT "vehicles_plate_unique" UNIQUE("plate")
);`,
  `CREATE TABLE "service_logs" (
\t"id" serial PRIMARY KEY NOT NULL,
\t"vehicle_id" integer NOT NULL,
\t"note" text NOT NULL
);`,
  'ALTER TABLE "service_logs" ADD CONSTRAINT "service_logs_vehicle_id_vehicles_id_fk" FOREIGN KEY ("vehicle_id") REFERENCES "public"."vehicles"("id") ON DELETE cascade ON UPDATE no action;',
  'CREATE INDEX "vehicles_name_trgm" ON "vehicles" USING gin ("name" gin_trgm_ops);',
].join('--> statement-breakpoint\n');

export interface MigrationFile {
  tag: string;
  sql: string;
  when?: number;
}

/** Writes a drizzle-kit migrations folder (journal + SQL files) and returns its path. */
export function writeMigrations(migrations: MigrationFile[], folder = mkdtempSync(join(tmpdir(), 'db-migrations-'))): string {
  mkdirSync(join(folder, 'meta'), { recursive: true });
  const entries = migrations.map((m, idx) => ({
    idx,
    version: '7',
    when: m.when ?? 1_700_000_000_000 + idx * 1000,
    tag: m.tag,
    breakpoints: true,
  }));
  writeFileSync(join(folder, 'meta', '_journal.json'), JSON.stringify({ version: '7', dialect: 'postgresql', entries }, null, 2));
  for (const m of migrations) writeFileSync(join(folder, `${m.tag}.sql`), m.sql);
  return folder;
}

/** The migrations folder of the schema above. */
export function initMigrations(): string {
  return writeMigrations([{ tag: '0000_init', sql: INIT_SQL }]);
}
