import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hashPassword } from '@repo/auth';
import { sessionToken } from '@repo/auth/testing';
import { createDatabase, queryRows, sql, type DatabaseHandle } from '@repo/db';
import { createTestDatabase, initializedPgliteDir, migrateAsBefore } from '@repo/db/testing';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { migrationsFolder, schema, type Schema } from '../src/db/index.js';

const extensions = ['pg_trgm', 'btree_gin'] as const;
const journal = JSON.parse(readFileSync(join(migrationsFolder, 'meta', '_journal.json'), 'utf8')) as { entries: { tag: string }[] };
const OWN_SCHEMA_MIGRATION = '0011_own_schema';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.().catch(() => undefined);
});

function config(env: Record<string, string> = {}) {
  return loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', DATA_DIR: 'memory://', RATE_LIMIT_AUTHENTICATED: '100000', RATE_LIMIT_PUBLIC: '100000', ...env });
}

async function app(database: DatabaseHandle<Schema>, env: Record<string, string> = {}): Promise<FastifyInstance> {
  const built = await buildApp(config(env), { database });
  cleanups.push(() => built.close());
  await built.ready();
  return built;
}

async function rows<T extends Record<string, unknown>>(database: DatabaseHandle<Schema>, query: ReturnType<typeof sql>) {
  return queryRows<T>(database.db, query);
}

describe('a database migrated before the log tracker had a schema of its own', () => {
  it('moves its tables, partitions, functions and history into "logtracker", and the app goes on with its data', async () => {
    // Today's layout: everything in public, the history in drizzle.__drizzle_migrations.
    let upgraded: DatabaseHandle<Schema> | undefined;
    const serverUrl = process.env.TEST_DATABASE_URL;
    let legacy: { url?: string; dataDir?: string };
    if (serverUrl) {
      const fresh = await createTestDatabase({ schema, migrationsFolder, extensions: [...extensions], migrate: false });
      cleanups.push(() => fresh.destroy());
      legacy = { url: fresh.url };
      upgraded = fresh;
    } else {
      const dataDir = await initializedPgliteDir('logtracker-upgrade-');
      cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
      legacy = { dataDir };
    }
    await migrateAsBefore({ ...legacy, migrationsFolder, before: OWN_SCHEMA_MIGRATION, extensions: [...extensions] });

    const old = await createDatabase({ ...legacy, schema: {}, migrationsFolder, extensions: [...extensions] });
    const [user] = await queryRows<{ id: number }>(
      old.db,
      sql`insert into public.users (name, email, password_hash) values ('Old', 'old@example.test', ${await hashPassword('correct horse battery')}) returning id`,
    );
    const [project] = await queryRows<{ id: number }>(old.db, sql`insert into public.projects (name, created_by) values ('Kept', ${user!.id}) returning id`);
    await old.db.execute(sql`insert into public.project_members (project_id, user_id, role) values (${project!.id}, ${user!.id}, 'owner')`);
    await old.db.execute(sql`insert into public.logs (project_id, level, message, timestamp) values (${project!.id}, 'error', 'from before the move', now())`);
    await old.close();

    if (!upgraded) {
      const opened = await createDatabase({ ...legacy, schema, migrationsFolder, extensions: [...extensions] });
      cleanups.push(() => opened.close());
      upgraded = opened;
    }
    const handle = upgraded;
    await handle.migrate();

    const where = await rows<{ nspname: string; relname: string }>(
      handle,
      sql`select n.nspname, c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
          where c.relname in ('users', 'logs', 'logs_default', 'alerts', 'fanout_payloads') and c.relkind in ('r', 'p') order by 2`,
    );
    expect(where.map((r) => `${r.nspname}.${r.relname}`)).toEqual([
      'logtracker.alerts',
      'logtracker.fanout_payloads',
      'logtracker.logs',
      'logtracker.logs_default',
      'logtracker.users',
    ]);
    const leftInPublic = await rows<{ relname: string }>(
      handle,
      sql`select c.relname from pg_class c where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p')`,
    );
    expect(leftInPublic).toEqual([]);
    const functions = await rows<{ proname: string }>(
      handle,
      sql`select proname from pg_proc where pronamespace = 'logtracker'::regnamespace order by 1`,
    );
    expect(functions.map((f) => f.proname)).toEqual([
      'log_for_member',
      'log_hour_key',
      'log_partition_ids_refresh',
      'log_search_keys',
      'log_search_query_keys',
      'log_search_rare_query_keys',
      'log_search_refresh_common_keys',
      'logs_detach_empty_partition',
      'logs_ensure_partitions',
      'logs_partition_statistics',
      'logs_rollup_delete',
      'logs_rollup_insert',
    ]);
    // The whole history, carried over once, then the move recorded after it.
    const history = await rows<{ n: number }>(handle, sql`select count(*)::int as n from logtracker.__drizzle_migrations`);
    expect(history[0]?.n).toBe(journal.entries.length);
    expect(await handle.schemaStatus()).toMatchObject({ current: true, expected: journal.entries.at(-1)?.tag });
    // A second run changes nothing.
    await handle.migrate();
    expect((await rows<{ n: number }>(handle, sql`select count(*)::int as n from logtracker.__drizzle_migrations`))[0]?.n).toBe(journal.entries.length);

    // The app reads the old rows and writes new ones: raw SQL, the rollup triggers' functions, partitions.
    const api = await app(handle);
    const headers = { authorization: `Bearer ${await sessionToken(api, user!.id)}` };
    const ingested = await api.inject({
      method: 'POST',
      url: `/api/projects/${project!.id}/logs`,
      headers,
      payload: { level: 'error', message: 'after the move' },
    });
    expect(ingested.statusCode).toBe(201);
    const listed = await api.inject({ method: 'GET', url: `/api/projects/${project!.id}/logs`, headers, query: { search: 'move' } });
    expect(listed.statusCode).toBe(200);
    expect(listed.json().data.map((l: { message: string }) => l.message).sort()).toEqual(['after the move', 'from before the move']);
    const stats = await api.inject({ method: 'GET', url: `/api/projects/${project!.id}/stats`, headers });
    expect(stats.statusCode).toBe(200);
    expect(stats.json().data.by_level.error).toBe(2);
  }, 120_000);
});

describe('readiness and liveness', () => {
  it('is live but not ready on an unmigrated database, ready once migrated, and not ready when the database is gone', async () => {
    const database = await createTestDatabase({ schema, migrationsFolder, extensions: [...extensions], migrate: false });
    cleanups.push(() => database.destroy());
    const api = await app(database, { MIGRATE_ON_START: 'false' });

    const live = await api.inject({ method: 'GET', url: '/api/health/live' });
    expect(live.statusCode).toBe(200);
    expect(live.json().data).toMatchObject({ status: 'ok', version: '1.0.0' });
    const unmigrated = await api.inject({ method: 'GET', url: '/api/health/ready' });
    expect(unmigrated.statusCode).toBe(503);
    expect(unmigrated.json().data).toMatchObject({
      status: 'not_ready',
      database: { status: 'up' },
      schema: { status: 'behind', expected_migration: journal.entries.at(-1)?.tag },
    });

    await database.migrate();
    const ready = await api.inject({ method: 'GET', url: '/api/health/ready' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json().data).toMatchObject({ status: 'ready', database: { status: 'up' }, schema: { status: 'current' } });

    await database.close();
    const down = await api.inject({ method: 'GET', url: '/api/health/ready' });
    expect(down.statusCode).toBe(503);
    expect(down.json().data).toMatchObject({ status: 'not_ready', database: { status: 'down' }, schema: { status: 'unknown' } });
    // Liveness never asks the database: a pod is not restarted for an outage it cannot fix.
    expect((await api.inject({ method: 'GET', url: '/api/health/live' })).statusCode).toBe(200);
  }, 60_000);

  it('documents both probes as public operations', async () => {
    const database = await createTestDatabase({ schema, migrationsFolder, extensions: [...extensions] });
    cleanups.push(() => database.destroy());
    const api = await app(database);
    const doc = (await api.inject({ method: 'GET', url: '/docs/json' })).json();
    expect(doc.paths['/api/health/live'].get).toMatchObject({ operationId: 'healthLive', security: [] });
    expect(doc.paths['/api/health/ready'].get).toMatchObject({ operationId: 'healthReady', security: [] });
    expect(Object.keys(doc.paths['/api/health/ready'].get.responses)).toEqual(expect.arrayContaining(['200', '503']));
  }, 60_000);
});

const marketplace = fileURLToPath(new URL('../../marketplace-api/dist/', import.meta.url));

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function run(script: string, env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [join(marketplace, script)], { cwd: env.DATA_DIR, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
}

function exited(child: ChildProcess): Promise<{ code: number | null; output: string }> {
  let output = '';
  child.stdout?.on('data', (chunk) => (output += String(chunk)));
  child.stderr?.on('data', (chunk) => (output += String(chunk)));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, output })));
}

async function answering(url: string, deadline = Date.now() + 30_000): Promise<Response> {
  for (;;) {
    try {
      return await fetch(url);
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

describe.skipIf(!process.env.TEST_DATABASE_URL)('both apps on one PostgreSQL database', () => {
  it('migrates the marketplace and the log tracker into one database at once, and both serve their routes', async () => {
    const database = await createTestDatabase({ schema, migrationsFolder, extensions: [...extensions], migrate: false });
    cleanups.push(() => database.destroy());
    const dataDir = mkdtempSync(join(tmpdir(), 'marketplace-files-'));
    cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
    const env = { NODE_ENV: 'development', LOG_LEVEL: 'warn', DATABASE_URL: database.url!, DATA_DIR: dataDir, JWT_SECRET: 'one-database-test-secret-of-some-length' };

    // Both at once, as two Jobs (or two apps starting) would: the marketplace by its migration Job's
    // command, the log tracker at start-up. The migrations take turns (an advisory lock), each app's
    // history lands in its own schema, and neither hides the other's.
    const [migrated, handle] = await Promise.all([
      exited(run('cli/migrate.js', env)),
      createDatabase({ url: database.url, schema, migrationsFolder, extensions: [...extensions], migrate: true }),
    ]);
    cleanups.push(() => handle.close());
    expect(migrated.code, migrated.output).toBe(0);
    const api = await app(handle);

    const port = await freePort();
    const server = run('server.js', { ...env, PORT: String(port), HOST: '127.0.0.1', MIGRATE_ON_START: 'false' });
    const stopped = exited(server);
    cleanups.push(async () => {
      server.kill('SIGTERM');
      await stopped;
    });

    const marketplaceReady = await answering(`http://127.0.0.1:${port}/api/v1/health/ready`);
    expect(marketplaceReady.status).toBe(200);
    // A marketplace route over its seeded reference data.
    const categories = await fetch(`http://127.0.0.1:${port}/api/v1/categories`);
    expect(categories.status).toBe(200);
    expect(((await categories.json()) as { data: unknown[] }).data.length).toBeGreaterThan(0);

    expect((await api.inject({ method: 'GET', url: '/api/health/ready' })).statusCode).toBe(200);
    const registered = await api.inject({
      method: 'POST',
      url: '/api/auth/register',
      payload: { name: 'Both', email: 'both@example.test', password: 'correct horse battery', password_confirmation: 'correct horse battery' },
    });
    expect(registered.statusCode).toBe(201);

    // Same table names, two schemas, two histories; nothing of either app in public.
    const users = await queryRows<{ nspname: string }>(
      database.db,
      sql`select n.nspname from pg_class c join pg_namespace n on n.oid = c.relnamespace where c.relname = 'users' and c.relkind = 'r' order by 1`,
    );
    expect(users.map((u) => u.nspname)).toEqual(['logtracker', 'marketplace']);
    const histories = await queryRows<{ nspname: string }>(
      database.db,
      sql`select n.nspname from pg_class c join pg_namespace n on n.oid = c.relnamespace where c.relname = '__drizzle_migrations' order by 1`,
    );
    expect(histories.map((h) => h.nspname)).toEqual(['logtracker', 'marketplace']);
    const inPublic = await queryRows<{ relname: string }>(database.db, sql`select relname from pg_class where relnamespace = 'public'::regnamespace and relkind in ('r', 'p')`);
    expect(inPublic).toEqual([]);
  }, 180_000);

  it('lets two replicas migrate one fresh database at once: one migrates, the other waits and finds it done', async () => {
    const database = await createTestDatabase({ schema, migrationsFolder, extensions: [...extensions], migrate: false });
    cleanups.push(() => database.destroy());
    const replicas = await Promise.all(
      [1, 2].map(() => createDatabase({ url: database.url, schema, migrationsFolder, extensions: [...extensions], migrate: true })),
    );
    for (const replica of replicas) cleanups.push(() => replica.close());
    const [history] = await queryRows<{ n: number }>(database.db, sql`select count(*)::int as n from logtracker.__drizzle_migrations`);
    expect(history?.n).toBe(journal.entries.length);
    for (const replica of replicas) expect(await replica.schemaStatus()).toMatchObject({ current: true });
  }, 120_000);

  it("hides the log tracker's migrations behind the marketplace's in the shared history of before; the upgraded apps recover that database", async () => {
    const database = await createTestDatabase({ schema, migrationsFolder, extensions: [...extensions], migrate: false });
    cleanups.push(() => database.destroy());
    // Before: the marketplace migrated into public with its history in drizzle.__drizzle_migrations …
    await migrateAsBefore({ url: database.url, migrationsFolder: fileURLToPath(new URL('../../marketplace-api/drizzle', import.meta.url)), before: '0017_own_schema' });
    // … where the log tracker read it as its own: each of its migrations older than the marketplace's
    // newest is taken for applied and skipped (a newer one then fails on tables never made; with
    // today's dates, all are older, and the log tracker "migrates" to nothing).
    await migrateAsBefore({ url: database.url, migrationsFolder, before: OWN_SCHEMA_MIGRATION });
    const [skipped] = await queryRows<{ logs: string | null }>(database.db, sql`select to_regclass('public.logs')::text as logs`);
    expect(skipped?.logs).toBeNull();

    const dataDir = mkdtempSync(join(tmpdir(), 'marketplace-files-'));
    cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
    const migrated = await exited(run('cli/migrate.js', { NODE_ENV: 'development', DATABASE_URL: database.url!, DATA_DIR: dataDir, JWT_SECRET: 'one-database-test-secret-of-some-length' }));
    expect(migrated.code, migrated.output).toBe(0);
    await database.migrate();
    expect(await database.schemaStatus()).toMatchObject({ current: true });
    const tables = await queryRows<{ nspname: string; n: number }>(
      database.db,
      sql`select n.nspname, count(*)::int as n from pg_class c join pg_namespace n on n.oid = c.relnamespace
          where c.relkind in ('r', 'p') and n.nspname in ('public', 'marketplace', 'logtracker') group by 1 order by 1`,
    );
    expect(tables.map((t) => t.nspname)).toEqual(['logtracker', 'marketplace']);
  }, 180_000);
});
