import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '@repo/db/testing';
import { and, eq, isNull, sql } from 'drizzle-orm';
import { getTableConfig, integer, pgTable, text } from 'drizzle-orm/pg-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from '@repo/http';
import { authPlugin, createSessionStore, createSessionsRepository, requireActor, sessionsTable } from '../src/index.js';
import { sessionToken } from '../src/testing.js';

const users = pgTable('users', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  role: text('role').notNull(),
  status: text('status').notNull().default('active'),
});
const sessions = sessionsTable({ userId: () => users.id, userIndexName: 'sessions_user_idx', ipRequired: true });
const schema = { users, sessions };

/** What drizzle-kit generates for the two tables above. */
const MIGRATION = [
  `CREATE TABLE "users" ("id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY, "role" text NOT NULL, "status" text DEFAULT 'active' NOT NULL);`,
  `CREATE TABLE "sessions" ("id" text PRIMARY KEY NOT NULL, "user_id" integer NOT NULL, "ip" text NOT NULL, "user_agent" text,
    "created_at" timestamp with time zone DEFAULT now() NOT NULL, "last_used_at" timestamp with time zone DEFAULT now() NOT NULL,
    "revoked_at" timestamp with time zone);`,
  'ALTER TABLE "sessions" ADD CONSTRAINT "sessions_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade;',
  'CREATE INDEX "sessions_user_idx" ON "sessions" USING btree ("user_id");',
].join('--> statement-breakpoint\n');

function migrationsFolder(): string {
  const folder = mkdtempSync(join(tmpdir(), 'sessions-migrations-'));
  mkdirSync(join(folder, 'meta'));
  const entries = [{ idx: 0, version: '7', when: 1_700_000_000_000, tag: '0000_sessions', breakpoints: true }];
  writeFileSync(join(folder, 'meta', '_journal.json'), JSON.stringify({ version: '7', dialect: 'postgresql', entries }));
  writeFileSync(join(folder, '0000_sessions.sql'), MIGRATION);
  return folder;
}

describe('sessionsTable', () => {
  it('is the `sessions` table with the index name and IP constraint the app asks for', () => {
    const required = getTableConfig(sessions);
    expect(required.name).toBe('sessions');
    expect(required.columns.map((c) => [c.name, c.notNull])).toEqual([
      ['id', true],
      ['user_id', true],
      ['ip', true],
      ['user_agent', false],
      ['created_at', true],
      ['last_used_at', true],
      ['revoked_at', false],
    ]);
    expect(required.indexes.map((i) => i.config.name)).toEqual(['sessions_user_idx']);
    expect(required.foreignKeys.map((fk) => fk.getName())).toEqual(['sessions_user_id_users_id_fk']);

    const optional = getTableConfig(sessionsTable({ userId: () => users.id, userIndexName: 'sessions_user_id_idx', ipRequired: false }));
    expect(optional.columns.find((c) => c.name === 'ip')?.notNull).toBe(false);
    expect(optional.indexes.map((i) => i.config.name)).toEqual(['sessions_user_id_idx']);
  });
});

describe('the session store', { timeout: 60_000 }, () => {
  let database: TestDatabase<typeof schema>;
  const ttlDays = 30;

  beforeAll(async () => {
    database = await createTestDatabase({ schema, migrationsFolder: migrationsFolder() });
  });
  afterAll(() => database?.destroy());

  const joined = () =>
    createSessionStore({
      db: database.db,
      ttlDays,
      sessions: createSessionsRepository({
        table: sessions,
        user: { table: users, id: users.id, role: users.role, allowed: eq(users.status, 'active') },
      }),
    });

  async function newUser(role = 'client') {
    const [user] = await database.db.insert(users).values({ role }).returning();
    return user!;
  }

  async function lastUsedAt(id: string) {
    const [row] = await database.db.select({ at: sessions.lastUsedAt }).from(sessions).where(eq(sessions.id, id));
    return row!.at;
  }

  it('opens a session and resolves it to its user’s role, for that user only', async () => {
    const store = joined();
    const user = await newUser('admin');
    const other = await newUser();
    const { id } = await store.create({ userId: user.id, ip: '203.0.113.9', userAgent: 'vitest' });

    expect(id).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(await store.resolve(id, user.id)).toEqual({ role: 'admin' });
    expect(await store.resolve(id, other.id)).toBeNull();
    expect(await store.resolve('no-such-session', user.id)).toBeNull();
    const [row] = await database.db.select().from(sessions).where(eq(sessions.id, id));
    expect(row).toMatchObject({ userId: user.id, ip: '203.0.113.9', userAgent: 'vitest', revokedAt: null });
  });

  it('ends a session on revoke, and every other one of the user on revokeAllForUser', async () => {
    const store = joined();
    const user = await newUser();
    const [a, b, c] = [await store.create({ userId: user.id, ip: '::1' }), await store.create({ userId: user.id, ip: '::1' }), await store.create({ userId: user.id, ip: '::1' })];
    const stranger = await newUser();
    const theirs = await store.create({ userId: stranger.id, ip: '::1' });

    await store.revoke(a!.id);
    expect(await store.resolve(a!.id, user.id)).toBeNull();
    expect(await store.resolve(b!.id, user.id)).toEqual({ role: 'client' });

    await store.revokeAllForUser(user.id, c!.id);
    expect(await store.resolve(b!.id, user.id)).toBeNull();
    expect(await store.resolve(c!.id, user.id)).toEqual({ role: 'client' });
    expect(await store.resolve(theirs.id, stranger.id)).toEqual({ role: 'client' });

    await store.revokeAllForUser(user.id);
    expect(await store.resolve(c!.id, user.id)).toBeNull();
    const live = await database.db.select().from(sessions).where(and(eq(sessions.userId, user.id), isNull(sessions.revokedAt)));
    expect(live).toEqual([]);
  });

  it('refuses a session whose user is no longer allowed, and again once allowed', async () => {
    const store = joined();
    const user = await newUser();
    const { id } = await store.create({ userId: user.id, ip: '::1' });
    await database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, user.id));
    expect(await store.resolve(id, user.id)).toBeNull();
    await database.db.update(users).set({ status: 'active' }).where(eq(users.id, user.id));
    expect(await store.resolve(id, user.id)).toEqual({ role: 'client' });
  });

  it('ends a session idle for its lifetime, and slides the last use at most once a minute', async () => {
    const store = joined();
    const user = await newUser();
    const { id } = await store.create({ userId: user.id, ip: '::1' });

    // Used 30 seconds ago: still recent, so resolving writes nothing.
    await database.db.update(sessions).set({ lastUsedAt: sql`now() - interval '30 seconds'` }).where(eq(sessions.id, id));
    const recent = await lastUsedAt(id);
    expect(await store.resolve(id, user.id)).not.toBeNull();
    expect(await lastUsedAt(id)).toEqual(recent);

    // Used two days ago: resolving moves the last use to now.
    await database.db.update(sessions).set({ lastUsedAt: sql`now() - interval '2 days'` }).where(eq(sessions.id, id));
    expect(await store.resolve(id, user.id)).not.toBeNull();
    expect(Date.now() - (await lastUsedAt(id)).getTime()).toBeLessThan(10_000);

    // Idle longer than the lifetime: over, and it stays over.
    await database.db.update(sessions).set({ lastUsedAt: sql`now() - make_interval(days => ${ttlDays + 1})` }).where(eq(sessions.id, id));
    expect(await store.resolve(id, user.id)).toBeNull();
    expect(await store.resolve(id, user.id)).toBeNull();
  });

  it('gives every session the one role when the app has a single kind of user', async () => {
    const repository = createSessionsRepository({ table: sessions, user: { role: 'user' } });
    const store = createSessionStore({ db: database.db, ttlDays, sessions: repository });
    const user = await newUser('whatever the column says');
    const { id } = await store.create({ userId: user.id, ip: '::1' });

    expect(await store.resolve(id, user.id)).toEqual({ role: 'user' });
    const [row] = await database.db.select({ createdAt: sessions.createdAt }).from(sessions).where(eq(sessions.id, id));
    expect(await repository.startedAt(database.db, id)).toEqual(row!.createdAt);
    expect(await repository.startedAt(database.db, 'no-such-session')).toBeUndefined();
  });

  it('works inside a caller’s transaction, which the repository functions take', async () => {
    const repository = createSessionsRepository({ table: sessions, user: { role: 'user' } });
    const user = await newUser();
    await database.db.insert(sessions).values({ id: 'in-tx', userId: user.id, ip: '::1' });
    await expect(
      database.db.transaction(async (tx) => {
        await repository.revokeAllForUser(tx, user.id);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await repository.resolve(database.db, 'in-tx', user.id, ttlDays)).toEqual({ role: 'user' });
  });

  it('backs the auth plugin: a token from sessionToken (the tests’ sign-in) authenticates until the session is revoked', async () => {
    const store = joined();
    const app = createServer({ logLevel: 'silent' });
    await app.register(authPlugin, { secret: 'test-secret-that-is-long-enough-for-hs256-0123456789', store });
    app.get('/me', { onRequest: app.auth.authenticate }, async (request) => ({ data: requireActor(request) }));
    await app.ready();
    try {
      const user = await newUser('prestataire');
      const token = await sessionToken(app, user.id);

      const me = await app.inject({ method: 'GET', url: '/me', headers: { authorization: `Bearer ${token}` } });
      expect(me.statusCode, me.body).toBe(200);
      const actor = (me.json() as { data: { userId: number; role: string; sessionId: string } }).data;
      expect(actor).toMatchObject({ userId: user.id, role: 'prestataire' });
      const [row] = await database.db.select().from(sessions).where(eq(sessions.id, actor.sessionId));
      expect(row).toMatchObject({ ip: '127.0.0.1', userAgent: 'vitest' });

      await store.revoke(actor.sessionId);
      expect((await app.inject({ method: 'GET', url: '/me', headers: { authorization: `Bearer ${token}` } })).statusCode).toBe(401);
    } finally {
      await app.close();
    }
  });
});
