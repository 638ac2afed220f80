import { existsSync, rmSync, statSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pgSchema } from 'drizzle-orm/pg-core';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { createTestDatabase } from '../src/testing.js';
import { initializedPgliteDir, postgresTemplate, snapshotKey, utcDay } from '../src/testing-snapshot.js';
import { INIT_SQL, initMigrations, schema, vehicles, writeMigrations } from './fixtures.js';

const serverUrl = process.env.TEST_DATABASE_URL;

describe('the migrated copy the test databases start from', () => {
  it('is named by the migrations’ content, not by their folder, and changes with any of them', () => {
    const key = snapshotKey({ schema, migrationsFolder: initMigrations(), migrate: true });
    expect(snapshotKey({ schema, migrationsFolder: initMigrations(), migrate: true })).toBe(key);
    const changed = writeMigrations([{ tag: '0000_init', sql: `${INIT_SQL}--> statement-breakpoint\nCREATE INDEX "vehicles_plate" ON "vehicles" ("plate");` }]);
    expect(snapshotKey({ schema, migrationsFolder: changed, migrate: true })).not.toBe(key);
    const more = writeMigrations([{ tag: '0000_init', sql: INIT_SQL }, { tag: '0001_note', sql: 'ALTER TABLE "service_logs" ADD COLUMN "at" timestamptz;' }]);
    expect(snapshotKey({ schema, migrationsFolder: more, migrate: true })).not.toBe(key);
    expect(snapshotKey({ schema, migrationsFolder: initMigrations(), extensions: ['pg_trgm', 'cube'], migrate: true })).not.toBe(key);
    expect(snapshotKey({ schema, migrationsFolder: initMigrations(), migrate: false })).not.toBe(key);
  });

  it('is made anew each UTC day when migrated (a migration may make what depends on the day), not when empty', () => {
    const migrated = { schema, migrationsFolder: initMigrations(), migrate: true };
    expect(utcDay(new Date('2026-11-27T23:59:59.999Z'))).toBe('20261127');
    expect(snapshotKey(migrated, '20261127')).toBe(snapshotKey(migrated, '20261127'));
    expect(snapshotKey(migrated, '20261128')).not.toBe(snapshotKey(migrated, '20261127'));
    expect(snapshotKey(migrated)).toBe(snapshotKey(migrated, utcDay()));
    const empty = { ...migrated, migrate: false };
    expect(snapshotKey(empty, '20261128')).toBe(snapshotKey(empty, '20261127'));
  });

  it('marks the initialised data directory it copies from as used, so that pruning by age leaves it while in use', { timeout: 60_000 }, async () => {
    const first = await initializedPgliteDir('snapshot-test-');
    const template = join(tmpdir(), 'repo-test-snapshots', `empty-datadir-${snapshotKey({ schema: {}, migrationsFolder: '', migrate: false })}`);
    const fourDaysAgo = new Date(Date.now() - 4 * 24 * 3600 * 1000);
    utimesSync(template, fourDaysAgo, fourDaysAgo);
    const second = await initializedPgliteDir('snapshot-test-');
    try {
      expect(Date.now() - statSync(template).mtimeMs).toBeLessThan(60_000);
      expect(existsSync(join(second, 'PG_VERSION'))).toBe(true);
    } finally {
      for (const dir of [first, second]) rmSync(dir, { recursive: true, force: true });
    }
  });

  it('gives each database its own copy: migrated, and what one writes the other never sees', { timeout: 60_000 }, async () => {
    const migrationsFolder = initMigrations();
    const first = await createTestDatabase({ schema, migrationsFolder });
    const second = await createTestDatabase({ schema, migrationsFolder });
    try {
      await first.db.insert(vehicles).values({ name: 'Clio', plate: 'AB-123-CD' });
      expect(await first.db.select({ plate: vehicles.plate }).from(vehicles)).toEqual([{ plate: 'AB-123-CD' }]);
      expect(await second.db.select().from(vehicles)).toEqual([]);
      // The same plate again in the second: the unique constraint came with the copy, the row did not.
      await second.db.insert(vehicles).values({ name: 'Clio', plate: 'AB-123-CD' });
      await expect(second.db.insert(vehicles).values({ name: 'Zoe', plate: 'AB-123-CD' })).rejects.toThrow();
    } finally {
      await first.destroy();
      await second.destroy();
    }
    const third = await createTestDatabase({ schema, migrationsFolder });
    try {
      expect(await third.db.select().from(vehicles)).toEqual([]);
    } finally {
      await third.destroy();
    }
  });

  it('is an empty database when no migration is asked for', { timeout: 60_000 }, async () => {
    const empty = await createTestDatabase({ schema, migrationsFolder: initMigrations(), migrate: false });
    try {
      await expect(empty.db.select().from(vehicles)).rejects.toThrow();
      await empty.migrate();
      expect(await empty.db.select().from(vehicles)).toEqual([]);
    } finally {
      await empty.destroy();
    }
  });

  it.skipIf(!serverUrl)('is one template database on the server, made once however many files ask at the same time', { timeout: 60_000 }, async () => {
    const url = serverUrl as string;
    const migrationsFolder = writeMigrations([{ tag: '0000_init', sql: `${INIT_SQL}--> statement-breakpoint\nCOMMENT ON TABLE "vehicles" IS '${Date.now()}';` }]);
    const source = { schema, migrationsFolder, migrate: true };
    const names = await Promise.all([postgresTemplate(url, source), postgresTemplate(url, source), postgresTemplate(url, source)]);
    expect(new Set(names).size).toBe(1);
    const databases = await Promise.all([createTestDatabase({ ...source, serverUrl: url }), createTestDatabase({ ...source, serverUrl: url })]);
    const admin = postgres(url, { max: 1, onnotice: () => {} });
    try {
      expect(await admin`select datname from pg_database where datname like ${`${names[0]}%`}`).toEqual([{ datname: names[0] }]);
      const [a, b] = databases as [(typeof databases)[0], (typeof databases)[0]];
      await a.db.insert(vehicles).values({ name: 'Clio', plate: 'AB-123-CD' });
      expect(await b.db.select().from(vehicles)).toEqual([]);
    } finally {
      await Promise.all(databases.map((database) => database.destroy()));
      await admin.unsafe(`drop database if exists "${names[0]}"`);
      await admin.end({ timeout: 5 });
    }
  });

  it.skipIf(!serverUrl)('is named by its day on the server, and making one drops those made over two days before', { timeout: 60_000 }, async () => {
    const url = serverUrl as string;
    // A schema of its own: only templates of the same schema are dropped, so neither this test nor
    // the other files making theirs at the same time (their days are today's) reach the other's.
    const migrationsFolder = writeMigrations([{ tag: '0000_init', sql: `${INIT_SQL}--> statement-breakpoint\nCOMMENT ON TABLE "vehicles" IS 'days ${Date.now()}';` }]);
    const source = { schema: { ...schema, own: pgSchema('template_days') }, migrationsFolder, migrate: true };
    const admin = postgres(url, { max: 1, onnotice: () => {} });
    const made: string[] = [];
    try {
      const first = await postgresTemplate(url, source, new Date('2001-03-01T12:00:00Z'));
      const next = await postgresTemplate(url, source, new Date('2001-03-02T12:00:00Z'));
      made.push(first, next);
      expect(first).toMatch(/^template_template_days_migrated_20010301_[0-9a-f]{16}$/);
      expect(next).toMatch(/_20010302_[0-9a-f]{16}$/);
      const exists = async (name: string) => (await admin`select 1 from pg_database where datname = ${name}`).length === 1;
      expect([await exists(first), await exists(next)]).toEqual([true, true]);
      // Two days on, the first (over two days before) is dropped and the second kept.
      made.push(await postgresTemplate(url, source, new Date('2001-03-04T01:00:00Z')));
      expect([await exists(first), await exists(next), await exists(made[2]!)]).toEqual([false, true, true]);
    } finally {
      for (const name of made) await admin.unsafe(`drop database if exists "${name}"`);
      await admin.end({ timeout: 5 });
    }
  });
});
