import { sessionToken } from '@repo/auth/testing';
import { startTestApp, type TestApp as SharedTestApp } from '@repo/db/testing';
import { bearer, expectError } from '@repo/http/expect-error';
import type { FastifyInstance } from 'fastify';
import { buildApp, type AppOverrides } from '../src/app.js';
import { loadConfig, type Config } from '../src/config.js';
import { extensions, migrationsFolder, schema, type Schema } from '../src/db/index.js';
import type { Lang, PrestataireProfile, Role, User, ValidationStatus } from '../src/db/schema/index.js';
import { prestataireProfiles } from '../src/db/schema/index.js';
import { systemActor } from '../src/lib/context.js';
import { createActivityRecorder } from '../src/modules/activity-log/activity-log.recorder.js';
import { createOutbox } from '../src/modules/outbox/outbox.js';
import { createUsersService, type NewAccount } from '../src/modules/user-store/users.service.js';
import { eq } from 'drizzle-orm';

// The generic helpers are the packages' (@repo/http, @repo/db); re-exported for the test files.
export { bearer, expectError } from '@repo/http/expect-error';

export type TestApp = SharedTestApp<FastifyInstance, Schema, Config>;

/** The app over a fresh, migrated database of its own (PGlite in memory or TEST_DATABASE_URL's server). */
export function buildTestApp(env: Record<string, string> = {}, overrides: Omit<AppOverrides, 'database'> = {}): Promise<TestApp> {
  return startTestApp({
    database: { schema, migrationsFolder, extensions },
    // Thousands of accounts: hashes of the lowest cost (the configuration refuses it in production).
    config: () => loadConfig({ NODE_ENV: 'test', LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', DATA_DIR: 'memory://', PASSWORD_HASH_COST: 'low', ...env }),
    build: (config, database) => buildApp(config, { ...overrides, database }),
  });
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
export function tokenFor(t: TestApp, userId: number): Promise<string> {
  return sessionToken(t.app, userId);
}

/** The users service over the test database, for set-ups the API does not offer (anonymising an account directly). */
export function usersService(t: TestApp) {
  const db = t.database.db;
  return createUsersService({ db, recorder: createActivityRecorder({ db }), outbox: createOutbox({ db }) });
}

async function createAccount(t: TestApp, role: Role, overrides: Partial<NewAccount> = {}): Promise<TestUser> {
  const n = unique();
  const password = 'correct horse battery';
  const email = overrides.email ?? `${role}${n}-${Date.now()}@example.test`;
  const { user, profile } = await usersService(t).createAccount(systemActor, {
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
            // Below the 60 000+ range that tests registering through the API use.
            siret: validSiret(n),
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

/** How the fake repair-data vendor answers a request. */
export type RepairDataVendorMode = 'ok' | 'error' | 'hang' | 'malformed' | 'wrong_shape' | 'unauthorized';

export interface RepairDataVendor {
  url: string;
  /** Every request received, in order: method, path with query string, body. */
  requests: { method: string; path: string; authorization?: string; body: unknown }[];
  /** Modes for the next requests, one each, before `mode` applies again. */
  queue: RepairDataVendorMode[];
  mode: RepairDataVendorMode;
  close(): Promise<void>;
}

/**
 * A local HTTP server in the repair-data vendor's shape (see src/integrations/repairdata/http.ts),
 * answering from the bundled dataset; `mode` and `queue` make it fail on demand.
 */
export async function startRepairDataVendor(opts: { apiKey?: string } = {}): Promise<RepairDataVendor> {
  const { createServer } = await import('node:http');
  const { createBuiltinRepairData } = await import('../src/integrations/repairdata/builtin.js');
  const source = createBuiltinRepairData();
  type V = NonNullable<Awaited<ReturnType<typeof source.identify>>>;
  type T = NonNullable<Awaited<ReturnType<typeof source.repairTime>>>;
  const vehicle = (v: V) => ({
    id: v.id,
    make: v.make,
    model: v.model,
    variant: v.variant,
    year_from: v.yearFrom,
    year_to: v.yearTo,
    fuel: v.fuel,
    engine_code: v.engineCode,
    engine_capacity_cc: v.engineCapacityCc,
    power_kw: v.powerKw,
    category: v.category,
  });
  const time = (t: T) => ({ task_code: t.taskCode, name: t.name, hours: t.hours, includes: t.includes, notes: t.notes });

  async function answer(method: string, url: URL, body: unknown): Promise<unknown> {
    const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    if (parts[0] !== 'vehicles') return null;
    if (method === 'GET' && parts.length === 2 && parts[1] === 'identify') {
      const vin = url.searchParams.get('vin') ?? undefined;
      const plate = url.searchParams.get('plate') ?? undefined;
      const v = await source.identify({ vin, plate });
      return v && vehicle(v);
    }
    const id = parts[1]!;
    if (method === 'GET' && parts.length === 2) {
      const p = await source.vehicle(id);
      return p && { ...vehicle(p), systems: p.systems, service_intervals: p.serviceIntervals };
    }
    if (method === 'GET' && parts.length === 3 && parts[2] === 'tasks') {
      const tasks = await source.searchTasks(id, {
        q: url.searchParams.get('q') ?? undefined,
        systemCode: url.searchParams.get('system') ?? undefined,
      });
      return tasks && { tasks: tasks.map((t) => ({ code: t.code, name: t.name, system_code: t.systemCode })) };
    }
    if (method === 'GET' && parts.length === 5 && parts[2] === 'tasks' && parts[4] === 'times') {
      const t = await source.repairTime(id, parts[3]!);
      return t && time(t);
    }
    if (method === 'POST' && parts.length === 4 && parts[2] === 'tasks' && parts[3] === 'times') {
      const r = await source.repairTimes(id, (body as { codes: string[] }).codes);
      return r && { times: r.times.map(time), unknown: r.unknown };
    }
    if (method === 'GET' && parts.length === 5 && parts[2] === 'systems' && parts[4] === 'procedures') {
      const p = await source.procedures(id, parts[3]!);
      return (
        p && {
          procedures: p.map((x) => ({ title: x.title, steps: x.steps, torque_specs: x.torqueSpecs, warnings: x.warnings })),
        }
      );
    }
    return null;
  }

  const vendor: RepairDataVendor = { url: '', requests: [], queue: [], mode: 'ok', close: async () => {} };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const body = raw ? (JSON.parse(raw) as unknown) : undefined;
      vendor.requests.push({ method: req.method!, path: req.url!, authorization: req.headers.authorization, body });
      const mode = vendor.queue.shift() ?? vendor.mode;
      const send = (status: number, payload: string) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(payload);
      if (mode === 'hang') return;
      if (mode === 'error') return send(503, '{"error":"maintenance"}');
      if (mode === 'malformed') return send(200, '{"id": "truncated');
      if (mode === 'wrong_shape') return send(200, '{"vehicle": {"name": "Clio"}, "tasks": "none"}');
      if (mode === 'unauthorized' || (opts.apiKey && req.headers.authorization !== `Bearer ${opts.apiKey}`)) {
        return send(401, '{"error":"invalid api key"}');
      }
      answer(req.method!, new URL(req.url!, 'http://vendor.test'), body).then(
        (result) => (result === null ? send(404, '{"error":"not found"}') : send(200, JSON.stringify(result))),
        () => send(500, '{"error":"internal"}'),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  vendor.url = `http://127.0.0.1:${port}`;
  vendor.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return vendor;
}

/** The callers an admin-only route must turn away: a client, a prestataire, a suspended administrator. */
export interface NonAdminTokens {
  client: string;
  prestataire: string;
  suspendedAdmin: string;
}

/**
 * Asserts that a route is for administrators only: 401 without a token and for a suspended
 * administrator (whose sessions no longer count), 403 for a client and a prestataire.
 */
export async function expectAdminOnly(
  t: TestApp,
  tokens: NonAdminTokens,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  url: string,
  payload?: unknown,
) {
  const send = (token?: string) =>
    t.app.inject({ method, url: `/api/v1${url}`, headers: token ? bearer(token) : {}, payload: payload as object | undefined });
  expectError(await send(), 401, 'unauthenticated');
  expectError(await send(tokens.client), 403, 'forbidden');
  expectError(await send(tokens.prestataire), 403, 'forbidden');
  expectError(await send(tokens.suspendedAdmin), 401, 'unauthenticated');
}
