import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createDatabase, queryRows, sql, type DatabaseHandle } from '../src/index.js';
import { INIT_SQL, initMigrations, schema, vehicles, writeMigrations } from './fixtures.js';

// createDatabase without a URL: the embedded PGlite, in memory or in a data directory, whichever
// server the other files test against (PGlite is what development and the default tests use); the
// pass on PostgreSQL leaves this file out (vitest.config.ts).
// Each PGlite takes a second or two to start, so every test here opens as few as it can.
const opened: DatabaseHandle<typeof schema>[] = [];
const dirs: string[] = [];

function track<T extends DatabaseHandle<typeof schema>>(handle: T): T {
  opened.push(handle);
  return handle;
}

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

afterAll(async () => {
  for (const handle of opened) await handle.close().catch(() => undefined);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const MILEAGE_SQL = [
  'ALTER TABLE "vehicles" ADD COLUMN "mileage_km" integer DEFAULT 0 NOT NULL;',
  'UPDATE "vehicles" SET "mileage_km" = 42;',
].join('--> statement-breakpoint\n');

describe('createDatabase over PGlite', { timeout: 30_000 }, () => {
  it('applies new migrations only, rolls back a failing one, and keeps a data directory across restarts', async () => {
    const dataDir = join(tempDir('pglite-data-'), 'nested', 'db');
    const folder = writeMigrations([{ tag: '0000_init', sql: INIT_SQL }]);

    const first = track(await createDatabase({ schema, migrationsFolder: folder, dataDir }));
    await first.migrate();
    await first.db.insert(vehicles).values({ name: 'Before', plate: 'B-1' });

    // A broken second migration: nothing of it stays, and the first one's data is untouched.
    writeMigrations(
      [
        { tag: '0000_init', sql: INIT_SQL },
        { tag: '0001_mileage', sql: `${MILEAGE_SQL}--> statement-breakpoint\nSELECT * FROM "no_such_table";` },
      ],
      folder,
    );
    await expect(first.migrate()).rejects.toThrow();
    const columns = await queryRows(
      first.db,
      sql`select 1 from information_schema.columns where table_name = 'vehicles' and column_name = 'mileage_km'`,
    );
    expect(columns).toEqual([]);
    expect(await first.db.select({ name: vehicles.name }).from(vehicles)).toEqual([{ name: 'Before' }]);

    // Fixed, it applies once, however often migrate runs.
    writeMigrations(
      [
        { tag: '0000_init', sql: INIT_SQL },
        { tag: '0001_mileage', sql: MILEAGE_SQL },
      ],
      folder,
    );
    await first.migrate();
    await first.migrate();
    await first.close();

    const second = track(await createDatabase({ schema, migrationsFolder: folder, dataDir }));
    await second.migrate();
    const rows = await queryRows<{ name: string; mileage_km: number }>(second.db, sql`select name, mileage_km from vehicles`);
    expect(rows).toEqual([{ name: 'Before', mileage_km: 42 }]);
    expect(await queryRows(second.db, sql`select id from drizzle.__drizzle_migrations`)).toHaveLength(2);
  });

  it('is in memory without a data directory, and loads only the extensions asked for', async () => {
    const folder = writeMigrations([
      {
        tag: '0000_bookings',
        sql: [
          'CREATE EXTENSION IF NOT EXISTS btree_gist;',
          'CREATE TABLE "bookings" ("bay" integer NOT NULL, "during" tstzrange NOT NULL, EXCLUDE USING gist ("bay" WITH =, "during" WITH &&));',
        ].join('--> statement-breakpoint\n'),
      },
    ]);
    const handle = track(await createDatabase({ schema, migrationsFolder: folder, extensions: ['btree_gist'] }));
    expect(handle.driver).toBe('pglite');
    await handle.migrate();
    // btree_gist gives exclusion constraints over an integer and a range: no overlapping bookings per bay.
    await handle.db.execute(sql`insert into bookings values (1, '[2030-01-01 09:00Z, 2030-01-01 10:00Z)')`);
    await handle.db.execute(sql`insert into bookings values (2, '[2030-01-01 09:00Z, 2030-01-01 10:00Z)')`);
    await handle.db.execute(sql`insert into bookings values (1, '[2030-01-01 10:00Z, 2030-01-01 11:00Z)')`);
    await expect(
      handle.db.execute(sql`insert into bookings values (1, '[2030-01-01 09:30Z, 2030-01-01 10:30Z)')`),
    ).rejects.toThrow();

    // pg_trgm was not asked for this time, so PGlite cannot create it.
    await expect(handle.db.execute(sql`create extension pg_trgm`)).rejects.toThrow();
  });
});

describe('the migrations folder fixture', () => {
  it('is in drizzle-kit’s format', () => {
    const folder = initMigrations();
    dirs.push(folder);
    const journal = JSON.parse(readFileSync(join(folder, 'meta', '_journal.json'), 'utf8')) as unknown;
    expect(journal).toEqual({
      version: '7',
      dialect: 'postgresql',
      entries: [{ idx: 0, version: '7', when: 1700000000000, tag: '0000_init', breakpoints: true }],
    });
    const statements = readFileSync(join(folder, '0000_init.sql'), 'utf8').split('--> statement-breakpoint');
    expect(statements[0]!.trim()).toBe('CREATE EXTENSION IF NOT EXISTS pg_trgm;');
    expect(statements.at(-1)).toMatch(/USING gin \("name" gin_trgm_ops\)/);
  });
});
