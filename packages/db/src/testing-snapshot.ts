import { createHash, randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PGlite } from '@electric-sql/pglite';
import postgres from 'postgres';
import { createDatabase } from './connect.js';
import { appSchemaName } from './migrations.js';
import { openPglite, type ExtensionName } from './pglite.js';

/**
 * Every test file gets a database of its own; what makes one is the same for all of them (initdb,
 * then the app's migrations), so it is done once and copied: on PGlite from a dump of a migrated
 * data directory kept in the system's temporary folder, on PostgreSQL from a template database.
 * Both are named by a digest of what they are made of (the migrations, the extensions, the
 * app's schema, this package's migration code, PGlite's build), so a change to any of them
 * makes a new one and a stale copy is never used. A migrated one is also named by its UTC day:
 * migrations may make what depends on the day they run (the log tracker's daily partitions, from
 * yesterday to a week ahead), and tests assume what a migration run today would make.
 */
export interface SnapshotSource {
  schema: Record<string, unknown>;
  migrationsFolder: string;
  extensions?: ExtensionName[];
  /** false: an empty database (no migration run), as a Job would find it. */
  migrate: boolean;
}

const require = createRequire(import.meta.url);
/** Dumps older than this are removed when a new one is written (other branches', old migrations). */
const SNAPSHOT_MAX_AGE_MS = 3 * 24 * 3600 * 1000;

function filesUnder(folder: string): string[] {
  return readdirSync(folder, { recursive: true, encoding: 'utf8' })
    .filter((name) => statSync(join(folder, name)).isFile())
    .sort();
}

/** The UTC day of a date as YYYYMMDD: what a migrated copy is made for. */
export function utcDay(date = new Date()): string {
  return date.toISOString().slice(0, 10).replaceAll('-', '');
}

/** The package's files whose code decides what a migrated PGlite database holds. */
const MIGRATION_CODE = ['migrations', 'connect-pglite', 'pglite'];

/**
 * The digest naming a source's snapshot: every input that changes what the migrated database holds,
 * the day it is made for included.
 */
export function snapshotKey(source: SnapshotSource, day = utcDay()): string {
  const hash = createHash('sha256');
  hash.update(`pglite:${require.resolve('@electric-sql/pglite')}\n`);
  // The package's migration code, beside this file (.js when built, .ts from source).
  const self = fileURLToPath(import.meta.url);
  for (const file of MIGRATION_CODE) hash.update(readFileSync(join(dirname(self), basename(self).replace('testing-snapshot', file))));
  if (source.migrate) {
    hash.update(`day:${day}\n`);
    hash.update(`schema:${appSchemaName(source.schema) ?? ''}\nextensions:${[...(source.extensions ?? ['pg_trgm'])].sort().join(',')}\n`);
    for (const name of filesUnder(source.migrationsFolder)) {
      hash.update(`file:${name}\n`);
      hash.update(readFileSync(join(source.migrationsFolder, name)));
    }
  } else {
    hash.update('empty\n');
  }
  return hash.digest('hex').slice(0, 16);
}

function snapshotFolder(): string {
  const folder = join(tmpdir(), 'repo-test-snapshots');
  mkdirSync(folder, { recursive: true });
  return folder;
}

function pruneOldSnapshots(folder: string): void {
  for (const name of readdirSync(folder)) {
    const path = join(folder, name);
    try {
      if (Date.now() - statSync(path).mtimeMs > SNAPSHOT_MAX_AGE_MS) rmSync(path, { recursive: true, force: true });
    } catch {
      // Removed meanwhile by another process: nothing to do.
    }
  }
}

/**
 * The PGlite dump of the source's database, made once per content (by the first test file that asks;
 * two processes racing both make it, and the last rename wins with the same content).
 */
export async function pgliteSnapshot(source: SnapshotSource): Promise<Blob> {
  const folder = snapshotFolder();
  const path = join(folder, `${source.migrate ? `${appSchemaName(source.schema) ?? 'public'}-migrated` : 'empty'}-${snapshotKey(source)}.tar`);
  try {
    return new Blob([readFileSync(path)]);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const handle = await createDatabase({ ...source, dataDir: 'memory://', migrate: source.migrate });
  let dump: Blob;
  try {
    // drizzle keeps the client it was given; PGlite's own methods dump its files as a tarball.
    dump = await (handle.db as unknown as { $client: PGlite }).$client.dumpDataDir('none');
  } finally {
    await handle.close();
  }
  const partial = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(partial, Buffer.from(await dump.arrayBuffer()));
  renameSync(partial, path);
  pruneOldSnapshots(folder);
  return dump;
}

/**
 * A new PGlite data directory in the system's temporary folder, already initialised (initdb run)
 * and empty: what a first start in an empty directory leaves, without the seconds of initdb. The
 * initialised directory is made once per PGlite build (kept beside the dumps) and copied for each
 * caller; the caller removes its copy. A test of what happens in an empty directory makes its own.
 */
export async function initializedPgliteDir(prefix: string): Promise<string> {
  const folder = snapshotFolder();
  const template = join(folder, `empty-datadir-${snapshotKey({ schema: {}, migrationsFolder: '', migrate: false })}`);
  // Marked as used before it is copied: the pruning of old snapshots (by age) leaves alone what a
  // run still copies. One pruned meanwhile is made again.
  if (!markedUsed(template)) {
    const building = mkdtempSync(join(folder, 'empty-datadir-building-'));
    // Started once (initdb) and closed: no extension is created in it, so none is loaded.
    const pglite = await openPglite(building, []);
    await pglite.close();
    try {
      renameSync(building, template);
    } catch {
      // Another process made it meanwhile: the same content.
      rmSync(building, { recursive: true, force: true });
    }
  }
  const copy = mkdtempSync(join(tmpdir(), prefix));
  cpSync(template, copy, { recursive: true });
  return copy;
}

/** Sets a path's times to now: false when it does not exist. */
function markedUsed(path: string): boolean {
  const now = new Date();
  try {
    utimesSync(path, now, now);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

const TEMPLATE_LOCK = "select pg_advisory_lock(hashtext('repo-test-template'))";
const TEMPLATE_UNLOCK = "select pg_advisory_unlock(hashtext('repo-test-template'))";

/** Template databases of an earlier day than this many days ago are dropped when one is made. */
const TEMPLATE_KEEP_DAYS = 2;

/**
 * The name of a migrated template database on the server for the source, made once per content
 * and day under an advisory lock (the first test file makes it, the others wait for it). Nothing
 * connects to it afterwards, so `CREATE DATABASE … TEMPLATE` copies it for each file, in parallel.
 * Making one drops the templates of the same schema made more than TEMPLATE_KEEP_DAYS days before,
 * which no run uses.
 */
export async function postgresTemplate(serverUrl: string, source: SnapshotSource, now = new Date()): Promise<string> {
  const day = utcDay(now);
  const prefix = `template_${appSchemaName(source.schema) ?? 'public'}_${source.migrate ? 'migrated' : 'empty'}_`;
  const name = `${prefix}${day}_${snapshotKey(source, day)}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  try {
    const found = await admin`select 1 from pg_database where datname = ${name}`;
    if (found.length > 0) return name;
    await admin.unsafe(TEMPLATE_LOCK);
    try {
      const again = await admin`select 1 from pg_database where datname = ${name}`;
      if (again.length > 0) return name;
      const building = `${name}_building`;
      await admin.unsafe(`drop database if exists "${building}" with (force)`);
      await admin.unsafe(`create database "${building}"`);
      const url = new URL(serverUrl);
      url.pathname = `/${building}`;
      const handle = await createDatabase({ ...source, url: url.toString(), poolSize: 1, migrate: source.migrate });
      await handle.close();
      // Renamed only once complete: a name that exists is a finished template.
      await admin.unsafe(`alter database "${building}" rename to "${name}"`);
      await dropOldTemplates(admin, prefix, utcDay(new Date(now.getTime() - TEMPLATE_KEEP_DAYS * 24 * 3600 * 1000)));
      return name;
    } finally {
      await admin.unsafe(TEMPLATE_UNLOCK);
    }
  } finally {
    await admin.end({ timeout: 5 });
  }
}

/** Drops the template databases named `<prefix><YYYYMMDD>_<digest>` made for a day before `oldestKept`. */
async function dropOldTemplates(admin: postgres.Sql, prefix: string, oldestKept: string): Promise<void> {
  const rows = await admin<{ datname: string }[]>`select datname from pg_database where starts_with(datname, ${prefix})`;
  for (const { datname } of rows) {
    const day = /^([0-9]{8})_[0-9a-f]{16}$/.exec(datname.slice(prefix.length))?.[1];
    if (!day || day >= oldestKept) continue;
    try {
      await admin.unsafe(`drop database if exists "${datname}"`);
    } catch {
      // Being copied by a run that is still going: the next template made drops it.
    }
  }
}
