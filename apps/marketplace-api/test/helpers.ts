import { createTestDatabase, type TestDatabase } from '@repo/db/testing';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { buildApp, type AppOverrides } from '../src/app.js';
import { loadConfig, type Config } from '../src/config.js';
import { migrationsFolder, schema, type Schema } from '../src/db/index.js';
import type { Lang, PrestataireProfile, Role, User, ValidationStatus } from '../src/db/schema/index.js';
import { prestataireProfiles } from '../src/db/schema/index.js';
import { systemContext } from '../src/lib/context.js';
import { createUsersService, type NewAccount } from '../src/modules/users/users.service.js';
import { eq } from 'drizzle-orm';

export interface TestApp {
  app: FastifyInstance;
  database: TestDatabase<Schema>;
  config: Readonly<Config>;
  close(): Promise<void>;
}

/** The app over a fresh, migrated database of its own (PGlite in memory or TEST_DATABASE_URL's server). */
export async function buildTestApp(env: Record<string, string> = {}, overrides: Omit<AppOverrides, 'database'> = {}): Promise<TestApp> {
  const database = await createTestDatabase({ schema, migrationsFolder, extensions: ['pg_trgm', 'btree_gist'] });
  const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', DATA_DIR: 'memory://', ...env });
  const app = await buildApp(config, { ...overrides, database });
  await app.ready();
  return {
    app,
    database,
    config,
    async close() {
      await app.close();
      await database.destroy();
    },
  };
}

/** A SIRET passing the Luhn check, different for each `n`. */
export function validSiret(n: number): string {
  const body = `73282932${String(n % 100_000).padStart(5, '0')}`;
  for (let check = 0; check < 10; check++) {
    const candidate = `${body}${check}`;
    let sum = 0;
    for (let i = 0; i < 14; i++) {
      let d = Number(candidate[13 - i]);
      if (i % 2 === 1) {
        d *= 2;
        if (d > 9) d -= 9;
      }
      sum += d;
    }
    if (sum % 10 === 0) return candidate;
  }
  throw new Error('unreachable');
}

let sequence = 0;
/** A unique number per call within a test file (e-mails, SIRETs). */
export function unique(): number {
  sequence += 1;
  return sequence;
}

export interface TestUser {
  user: User;
  profile: PrestataireProfile | null;
  token: string;
  password: string;
  email: string;
}

/** Opens a session for a user the way sign-in does, and returns its bearer token. */
export async function tokenFor(t: TestApp, userId: number): Promise<string> {
  const session = await t.app.auth.store.create({ userId, ip: '127.0.0.1', userAgent: 'vitest' });
  return t.app.jwt.sign({ sub: String(userId), sid: session.id });
}

async function createAccount(t: TestApp, role: Role, overrides: Partial<NewAccount> = {}): Promise<TestUser> {
  const n = unique();
  const password = 'correct horse battery';
  const email = overrides.email ?? `${role}${n}-${Date.now()}@example.test`;
  const users = createUsersService({ db: t.database.db });
  const { user, profile } = await users.createAccount(systemContext, {
    role,
    email,
    password,
    firstName: role === 'admin' ? 'Ada' : role === 'client' ? 'Camille' : 'Paul',
    lastName: `Tester${n}`,
    emailVerified: true,
    ...(role === 'prestataire'
      ? {
          profile: {
            businessName: `Garage ${n}`,
            siret: validSiret(n + Math.floor(Math.random() * 50_000)),
            address: '12 rue de la République',
            postalCode: '69002',
            city: 'Lyon',
            latitude: 45.7578,
            longitude: 4.832,
          },
        }
      : {}),
    ...overrides,
  });
  return { user, profile, token: await tokenFor(t, user.id), password, email };
}

export const createClient = (t: TestApp, overrides?: Partial<NewAccount>) => createAccount(t, 'client', overrides);
export const createAdmin = (t: TestApp, overrides?: Partial<NewAccount>) => createAccount(t, 'admin', overrides);

/** A prestataire in validation `pending` unless a status is given (`validated` for one visible in search). */
export async function createPrestataire(
  t: TestApp,
  opts: { status?: ValidationStatus; lang?: Lang; profile?: Partial<NonNullable<NewAccount['profile']>> } & Partial<Omit<NewAccount, 'profile'>> = {},
): Promise<TestUser> {
  const { status, profile, ...account } = opts;
  const created = await createAccount(t, 'prestataire', account);
  if (profile || (status && status !== 'pending')) {
    const [updated] = await t.database.db
      .update(prestataireProfiles)
      .set({ ...profile, ...(status ? { validationStatus: status, validatedAt: status === 'validated' ? new Date() : null } : {}) })
      .where(eq(prestataireProfiles.userId, created.user.id))
      .returning();
    created.profile = updated ?? created.profile;
  }
  return created;
}

export function bearer(token: string) {
  return { authorization: `Bearer ${token}` };
}

/** Asserts an error envelope with its status and code; answers the parsed body. */
export function expectError(res: LightMyRequestResponse, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  const body = res.json() as { error: string; message: string; errors?: Record<string, string[]> };
  expect(body.error).toBe(code);
  expect(typeof body.message).toBe('string');
  return body;
}
