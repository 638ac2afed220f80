import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { sessionToken } from '@repo/auth/testing';
import { createDatabase, queryRows, sql, type DatabaseHandle } from '@repo/db';
import { createTestDatabase, initializedPgliteDir, migrateAsBefore } from '@repo/db/testing';
import { bearer } from '@repo/http/expect-error';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { extensions, migrationsFolder, schema, type Schema } from '../src/db/index.js';

const journal = JSON.parse(readFileSync(join(migrationsFolder, 'meta', '_journal.json'), 'utf8')) as { entries: { tag: string }[] };

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.().catch(() => undefined);
});

async function app(database: DatabaseHandle<Schema>, env: Record<string, string> = {}): Promise<FastifyInstance> {
  const built = await buildApp(loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', DATA_DIR: 'memory://', ...env }), { database });
  cleanups.push(() => built.close());
  await built.ready();
  return built;
}

describe('a database migrated before the marketplace had a schema of its own', () => {
  it('moves its tables and history into "marketplace", and the app goes on with its data', async () => {
    // Today's layout first: everything in public, the history in drizzle.__drizzle_migrations.
    let location: { url?: string; dataDir?: string };
    let upgraded: DatabaseHandle<Schema> | undefined;
    if (process.env.TEST_DATABASE_URL) {
      const fresh = await createTestDatabase({ schema, migrationsFolder, extensions, migrate: false });
      cleanups.push(() => fresh.destroy());
      location = { url: fresh.url };
      upgraded = fresh;
    } else {
      const dataDir = await initializedPgliteDir('marketplace-upgrade-');
      cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
      location = { dataDir };
    }
    await migrateAsBefore({ ...location, migrationsFolder, before: '0017_own_schema', extensions });
    const old = await createDatabase({ ...location, schema: {}, migrationsFolder, extensions });
    const [user] = await queryRows<{ id: number }>(
      old.db,
      sql`insert into public.users (role, email, first_name, last_name) values ('client', 'old@example.test', 'Old', 'Client') returning id`,
    );
    await old.close();

    if (!upgraded) {
      const handle = await createDatabase({ ...location, schema, migrationsFolder, extensions });
      cleanups.push(() => handle.close());
      upgraded = handle;
    }
    await upgraded.migrate();

    const inPublic = await queryRows<{ relname: string }>(upgraded.db, sql`select relname from pg_class where relnamespace = 'public'::regnamespace and relkind in ('r', 'p')`);
    expect(inPublic).toEqual([]);
    const [moved] = await queryRows<{ n: number }>(upgraded.db, sql`select count(*)::int as n from marketplace.users`);
    expect(moved?.n).toBe(1);
    const [history] = await queryRows<{ n: number }>(upgraded.db, sql`select count(*)::int as n from marketplace.__drizzle_migrations`);
    expect(history?.n).toBe(journal.entries.length);
    expect(await upgraded.schemaStatus()).toMatchObject({ current: true });

    // Seeding (on start outside tests) and the routes run over the moved tables; the old account signs in.
    const api = await app(upgraded, { SEED_REFERENCE_DATA: 'true' });
    const categories = await api.inject({ method: 'GET', url: '/api/v1/categories' });
    expect(categories.statusCode).toBe(200);
    expect(categories.json().data.length).toBeGreaterThan(0);
    const me = await api.inject({ method: 'GET', url: '/api/v1/auth/me', headers: bearer(await sessionToken(api, user!.id)) });
    expect(me.statusCode).toBe(200);
    expect(me.json().data).toMatchObject({ email: 'old@example.test' });
    expect((await api.inject({ method: 'GET', url: '/api/v1/health/ready' })).statusCode).toBe(200);
  }, 180_000);
});

describe('readiness and liveness', () => {
  it('is live but not ready before the migration Job, ready after it, and live but not ready with the database gone', async () => {
    const database = await createTestDatabase({ schema, migrationsFolder, extensions, migrate: false });
    cleanups.push(() => database.destroy());
    const api = await app(database, { MIGRATE_ON_START: 'false' });

    expect((await api.inject({ method: 'GET', url: '/api/v1/health/live' })).statusCode).toBe(200);
    const before = await api.inject({ method: 'GET', url: '/api/v1/health/ready' });
    expect(before.statusCode).toBe(503);
    expect(before.json().data).toMatchObject({ status: 'not_ready', schema: { status: 'behind', expected_migration: journal.entries.at(-1)?.tag } });

    await database.migrate();
    expect((await api.inject({ method: 'GET', url: '/api/v1/health/ready' })).statusCode).toBe(200);

    await database.close();
    const down = await api.inject({ method: 'GET', url: '/api/v1/health/ready' });
    expect(down.statusCode).toBe(503);
    expect(down.json().data).toMatchObject({ status: 'not_ready', database: { status: 'down' } });
    expect((await api.inject({ method: 'GET', url: '/api/v1/health/live' })).statusCode).toBe(200);
  }, 60_000);
});
