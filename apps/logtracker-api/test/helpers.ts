import { hashPassword } from '@repo/auth';
import { sessionToken } from '@repo/auth/testing';
import { startTestApp, type TestApp as SharedTestApp } from '@repo/db/testing';
import type { FastifyInstance } from 'fastify';
import { buildApp, type AppOverrides } from '../src/app.js';
import { loadConfig, type Config } from '../src/config.js';
import { migrationsFolder, schema, type Schema } from '../src/db/index.js';
import { logs, projectMembers, projects, users, type LogLevel, type NewLog, type ProjectRole } from '../src/db/schema/index.js';

// The generic helpers are the packages' (@repo/http, @repo/db); re-exported for the test files.
export { expectError } from '@repo/http/expect-error';

export type TestApp = SharedTestApp<FastifyInstance, Schema, Config>;

/**
 * The app over a fresh, migrated database of its own (PGlite in memory, or a new database on the
 * server named by TEST_DATABASE_URL). Rate limits are high unless a test sets them.
 */
export function buildTestApp(env: Record<string, string> = {}, overrides: Omit<AppOverrides, 'database'> = {}): Promise<TestApp> {
  return startTestApp({
    database: { schema, migrationsFolder, extensions: ['pg_trgm', 'btree_gin'], customPlanPoolSize: 2, genericPlans: true },
    config: () =>
      loadConfig({
        NODE_ENV: 'test',
        LOG_LEVEL: 'silent',
        DATA_DIR: 'memory://',
        // Thousands of accounts: hashes of the lowest cost (the configuration refuses it in production).
        PASSWORD_HASH_COST: 'low',
        RATE_LIMIT_AUTHENTICATED: '100000',
        RATE_LIMIT_PUBLIC: '100000',
        ...env,
      }),
    build: (config, database) => buildApp(config, { ...overrides, database }),
  });
}

// One real argon2id hash shared by every factory user: hashing per user would dominate test time.
export const PASSWORD = 'correct horse battery';

/** A log as the API presents it. */
export interface LogBody {
  id: number;
  project_id: number;
  level: string;
  message: string;
  context: Record<string, unknown> | null;
  source: string | null;
  timestamp: string;
  received_at: string;
}
let passwordHash: Promise<string> | undefined;

let sequence = 0;
const unique = () => `${Date.now().toString(36)}${(sequence++).toString(36)}`;

export interface TestUser {
  id: number;
  email: string;
  name: string;
  token: string;
  headers: { authorization: string };
}

/** A user with a live session; `token` is a real bearer token. */
export async function createUser(t: TestApp, values: { name?: string; email?: string } = {}): Promise<TestUser> {
  passwordHash ??= hashPassword(PASSWORD);
  const email = values.email ?? `user-${unique()}@example.test`;
  const name = values.name ?? 'Test User';
  const [user] = await t.database.db
    .insert(users)
    .values({ name, email, passwordHash: await passwordHash })
    .returning();
  if (!user) throw new Error('no user inserted');
  const token = await sessionToken(t.app, user.id);
  return { id: user.id, email, name, token, headers: { authorization: `Bearer ${token}` } };
}

export async function createProject(
  t: TestApp,
  owner: TestUser,
  values: { name?: string; description?: string } = {},
) {
  const [project] = await t.database.db
    .insert(projects)
    .values({ name: values.name ?? `Project ${unique()}`, description: values.description ?? null, createdBy: owner.id })
    .returning();
  if (!project) throw new Error('no project inserted');
  await t.database.db.insert(projectMembers).values({ projectId: project.id, userId: owner.id, role: 'owner' });
  return project;
}

export async function addMember(t: TestApp, projectId: number, user: TestUser, role: ProjectRole = 'member') {
  await t.database.db.insert(projectMembers).values({ projectId, userId: user.id, role });
}

/** Inserts logs directly (fast); each entry may set any column. */
export async function createLogs(
  t: TestApp,
  projectId: number,
  entries: Partial<Omit<NewLog, 'projectId'>>[],
) {
  const now = Date.now();
  const rows = entries.map((e, i) => ({
    projectId,
    level: (e.level ?? 'info') as LogLevel,
    message: e.message ?? `message ${i}`,
    context: e.context ?? null,
    source: e.source ?? null,
    timestamp: e.timestamp ?? new Date(now - i * 1000),
    receivedAt: e.receivedAt ?? new Date(now),
  }));
  return t.database.db.insert(logs).values(rows).returning();
}
