import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { initializedPgliteDir } from '@repo/db/testing';
import { builtCli, runNode, secondPass } from '@repo/db/testing-files';
import { and, eq, inArray } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { activityLog, appointments, conversations, domainEvents, offers, serviceRequests } from '../src/db/schema/index.js';
import { createActivityRecorder } from '../src/modules/activity-log/activity-log.recorder.js';
import { createLifecycleTimersService } from '../src/modules/booking/timers/timers.service.js';
import { createOutbox } from '../src/modules/outbox/outbox.js';
import { createSettingsService } from '../src/modules/settings/settings.service.js';
import { createUsersService } from '../src/modules/user-store/users.service.js';
import { systemActor } from '../src/lib/context.js';
import { aBooking, anOffer, aRequest, DAY, HOUR } from './appointment-fixtures.js';
import { buildTestApp, validSiret, type TestApp } from './helpers.js';

const APP_DIR = fileURLToPath(new URL('..', import.meta.url));

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(() => t.close());

function timers(batchSize?: number) {
  const db = t.database.db;
  const recorder = createActivityRecorder({ db });
  return createLifecycleTimersService({ db, recorder, outbox: createOutbox({ db }), settings: createSettingsService({ db, recorder }), batchSize });
}

const ago = (ms: number) => new Date(Date.now() - ms);
const ahead = (ms: number) => new Date(Date.now() + ms);

async function statusesOf<T extends typeof serviceRequests | typeof offers | typeof appointments>(table: T, ids: number[]) {
  const rows = (await t.database.db
    .select({ id: table.id, status: table.status })
    .from(table as typeof serviceRequests)
    .where(inArray(table.id, ids))) as { id: number; status: string }[];
  return Object.fromEntries(rows.map((r) => [r.id, r.status]));
}

async function logOf(subjectType: string, id: number) {
  return t.database.db
    .select()
    .from(activityLog)
    .where(and(eq(activityLog.subjectType, subjectType), eq(activityLog.subjectId, id)));
}

async function eventTypes(subjectType: string, id: number) {
  const rows = await t.database.db
    .select({ type: domainEvents.type, actorId: domainEvents.actorId, payload: domainEvents.payload })
    .from(domainEvents)
    .where(and(eq(domainEvents.subjectType, subjectType), eq(domainEvents.subjectId, id)));
  return rows;
}

/** Nothing left to move: every timer's lists are empty. */
function nothingMoved(result: object) {
  for (const part of Object.values(result)) for (const ids of Object.values(part as Record<string, number[]>)) expect(ids).toEqual([]);
}

describe('request expiry', () => {
  it('expires open and quoted requests past expires_at with their pending offers, logged by the system and published, once', async () => {
    const { request: open } = await aRequest(t, { status: 'open', expiresAt: ago(HOUR) });
    const { request: quoted } = await aRequest(t, { status: 'quoted', expiresAt: ago(DAY) });
    const pending = await anOffer(t, quoted);
    const withdrawn = await anOffer(t, quoted, { status: 'withdrawn' });
    const { request: fresh } = await aRequest(t, { status: 'open', expiresAt: ahead(DAY) });
    const { request: accepted } = await aRequest(t, { status: 'accepted', expiresAt: ago(DAY) });

    const result = await timers().run(['request-expiry']);
    expect(result.request_expiry?.service_requests).toEqual(expect.arrayContaining([open.id, quoted.id]));
    expect(result.request_expiry?.service_requests).not.toContain(fresh.id);
    expect(result.request_expiry?.offers).toContain(pending.id);
    expect(result.offer_expiry).toBeUndefined();

    expect(await statusesOf(serviceRequests, [open.id, quoted.id, fresh.id, accepted.id])).toEqual({
      [open.id]: 'expired',
      [quoted.id]: 'expired',
      [fresh.id]: 'open',
      [accepted.id]: 'accepted',
    });
    expect(await statusesOf(offers, [pending.id, withdrawn.id])).toEqual({ [pending.id]: 'expired', [withdrawn.id]: 'withdrawn' });

    const [entry] = await logOf('service_request', quoted.id);
    expect(entry).toMatchObject({ action: 'service_request.expired', actorId: null, actorRole: 'system', before: { status: 'quoted' }, after: { status: 'expired' } });
    expect(await logOf('offer', pending.id)).toHaveLength(1);
    expect(await eventTypes('service_request', open.id)).toEqual([
      { type: 'service_request.expired', actorId: null, payload: expect.objectContaining({ from: 'open', to: 'expired', status: 'expired', client_id: open.clientId }) },
    ]);
    expect((await eventTypes('offer', pending.id)).map((e) => e.type)).toEqual(['offer.expired']);

    nothingMoved(await timers().run(['request-expiry']));
    expect(await logOf('service_request', quoted.id)).toHaveLength(1);
  });
});

describe('offer expiry', () => {
  it('expires pending offers past valid_until; the request stays quoted', async () => {
    const { request } = await aRequest(t, { status: 'quoted' });
    const stale = await anOffer(t, request, { validUntil: ago(HOUR) });
    const live = await anOffer(t, request, { validUntil: ahead(DAY) });
    const refused = await anOffer(t, request, { status: 'refused', validUntil: ago(DAY) });

    const result = await timers().run(['offer-expiry']);
    expect(result.offer_expiry?.offers).toContain(stale.id);
    expect(result.offer_expiry?.offers).not.toContain(live.id);
    expect(await statusesOf(offers, [stale.id, live.id, refused.id])).toEqual({ [stale.id]: 'expired', [live.id]: 'pending', [refused.id]: 'refused' });
    expect(await statusesOf(serviceRequests, [request.id])).toEqual({ [request.id]: 'quoted' });
    expect((await eventTypes('offer', stale.id)).map((e) => e.type)).toEqual(['offer.expired']);
    expect((await logOf('offer', stale.id))[0]).toMatchObject({ action: 'offer.expired', actorRole: 'system' });

    nothingMoved(await timers().run(['offer-expiry']));
  });

  it('a request left with no pending offer stays quoted even once all have expired', async () => {
    const { request } = await aRequest(t, { status: 'quoted' });
    const only = await anOffer(t, request, { validUntil: ago(HOUR) });
    await timers().run(['offer-expiry']);
    expect(await statusesOf(offers, [only.id])).toEqual({ [only.id]: 'expired' });
    expect(await statusesOf(serviceRequests, [request.id])).toEqual({ [request.id]: 'quoted' });
  });
});

describe('auto-completion', () => {
  it('completes ended appointments paid more than auto_complete_days ago, with their requests, once', async () => {
    const due = await aBooking(t, { status: 'ended', startsAt: ago(6 * DAY), paidAt: ago(4 * DAY) });
    const recent = await aBooking(t, { status: 'ended', startsAt: ago(2 * DAY), paidAt: ago(DAY) });
    const unpaid = await aBooking(t, { status: 'ended', startsAt: ago(9 * DAY) });
    const running = await aBooking(t, { status: 'in_progress', startsAt: ago(9 * DAY), paidAt: ago(8 * DAY) });

    const result = await timers().run(['auto-complete']);
    expect(result.auto_complete?.appointments).toContain(due.appointment.id);
    expect(result.auto_complete?.service_requests).toContain(due.request.id);
    const ids = [due, recent, unpaid, running].map((b) => b.appointment.id);
    expect(await statusesOf(appointments, ids)).toEqual({
      [due.appointment.id]: 'completed',
      [recent.appointment.id]: 'ended',
      [unpaid.appointment.id]: 'ended',
      [running.appointment.id]: 'in_progress',
    });
    expect(await statusesOf(serviceRequests, [due.request.id, recent.request.id])).toEqual({ [due.request.id]: 'completed', [recent.request.id]: 'accepted' });
    const [row] = await t.database.db.select().from(appointments).where(eq(appointments.id, due.appointment.id));
    expect(row?.completedAt).not.toBeNull();
    expect((await eventTypes('appointment', due.appointment.id)).map((e) => e.type)).toEqual(['appointment.completed']);
    expect((await eventTypes('service_request', due.request.id)).map((e) => e.type)).toEqual(['service_request.completed']);
    expect((await logOf('appointment', due.appointment.id))[0]).toMatchObject({ action: 'appointment.completed', actorRole: 'system', before: { status: 'ended' } });

    nothingMoved(await timers().run(['auto-complete']));
  });

  it('leaves an appointment whose conversation has a dispute open, and completes it once resolved', async () => {
    const disputed = await aBooking(t, { status: 'ended', startsAt: ago(6 * DAY), paidAt: ago(4 * DAY) });
    const [conversation] = await t.database.db
      .insert(conversations)
      .values({
        clientId: disputed.client.user.id,
        prestataireId: disputed.prestataire.user.id,
        appointmentId: disputed.appointment.id,
        disputeStatus: 'open',
        disputeReason: 'Bruit toujours présent',
        disputeReportedAt: new Date(),
      })
      .returning();
    await timers().run(['auto-complete']);
    expect(await statusesOf(appointments, [disputed.appointment.id])).toEqual({ [disputed.appointment.id]: 'ended' });
    await t.database.db.update(conversations).set({ disputeStatus: 'resolved', disputeResolvedAt: new Date() }).where(eq(conversations.id, conversation!.id));
    await timers().run(['auto-complete']);
    expect(await statusesOf(appointments, [disputed.appointment.id])).toEqual({ [disputed.appointment.id]: 'completed' });
  });
});

describe('all timers together', () => {
  it('moves every due row in batches, and a second pass moves nothing', async () => {
    const requests = await Promise.all([1, 2, 3, 4, 5].map(() => aRequest(t, { status: 'open', expiresAt: ago(HOUR) })));
    const result = await timers(2).run();
    expect(result.request_expiry?.service_requests).toEqual(expect.arrayContaining(requests.map((r) => r.request.id)));
    expect(Object.keys(result)).toEqual(['request_expiry', 'offer_expiry', 'auto_complete']);
    nothingMoved(await timers(2).run());
  });

  it.skipIf(!process.env.TEST_DATABASE_URL)('two instances running at once on PostgreSQL move each row once', async () => {
    const expiring = await Promise.all(Array.from({ length: 12 }, () => aRequest(t, { status: 'quoted', expiresAt: ago(HOUR) })));
    const offersOf = await Promise.all(expiring.map((r) => anOffer(t, r.request)));
    const { request: quoted } = await aRequest(t, { status: 'quoted' });
    const staleOffers = await Promise.all(Array.from({ length: 12 }, () => anOffer(t, quoted, { validUntil: ago(HOUR) })));
    const completable = await Promise.all(Array.from({ length: 8 }, (_, i) => aBooking(t, { status: 'ended', startsAt: ago((10 + i) * DAY), paidAt: ago(5 * DAY) })));

    const [a, b] = await Promise.all([timers(3).run(), timers(3).run()]);
    const moved = (pick: (r: typeof a) => number[] | undefined) => [...(pick(a) ?? []), ...(pick(b) ?? [])];
    const once = (ids: number[], expected: number[]) => {
      expect([...ids].sort((x, y) => x - y)).toEqual([...expected].sort((x, y) => x - y));
    };
    once(moved((r) => r.request_expiry?.service_requests), expiring.map((r) => r.request.id));
    once([...moved((r) => r.request_expiry?.offers), ...moved((r) => r.offer_expiry?.offers)], [...offersOf, ...staleOffers].map((o) => o.id));
    once(moved((r) => r.auto_complete?.appointments), completable.map((c) => c.appointment.id));
    for (const c of completable) expect(await eventTypes('appointment', c.appointment.id)).toHaveLength(1);
    for (const o of staleOffers) expect(await logOf('offer', o.id)).toHaveLength(1);
  });
});

describe('the scheduler', () => {
  it('runs the timers once the app is ready, then on its interval', async () => {
    const app = await buildTestApp({ LIFECYCLE_TIMERS_INTERVAL_SECONDS: '1' });
    try {
      const { request } = await aRequest(app, { status: 'open', expiresAt: ago(HOUR) });
      await app.app.ready();
      const deadline = Date.now() + 10_000;
      let status: string | undefined;
      while (Date.now() < deadline) {
        [{ status } = { status: undefined }] = await app.database.db.select({ status: serviceRequests.status }).from(serviceRequests).where(eq(serviceRequests.id, request.id));
        if (status === 'expired') break;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(status).toBe('expired');
    } finally {
      await app.close();
    }
  });

  it('is off by default under NODE_ENV=test, 60 seconds otherwise, and refuses a bad value', () => {
    expect(loadConfig({ NODE_ENV: 'test' }).lifecycleTimersIntervalSeconds).toBe(0);
    expect(loadConfig({ NODE_ENV: 'development' }).lifecycleTimersIntervalSeconds).toBe(60);
    expect(loadConfig({ NODE_ENV: 'development', LIFECYCLE_TIMERS_INTERVAL_SECONDS: '0' }).lifecycleTimersIntervalSeconds).toBe(0);
    expect(() => loadConfig({ NODE_ENV: 'development', LIFECYCLE_TIMERS_INTERVAL_SECONDS: '-1' })).toThrow(/LIFECYCLE_TIMERS_INTERVAL_SECONDS/);
  });
});

describe.skipIf(secondPass)('timers CLI (node dist/cli/timers.js), on a PGlite data directory whatever the pass', () => {
  const cli = join(APP_DIR, 'dist', 'cli', 'timers.js');
  let dataDir: string;

  beforeAll(async () => {
    await builtCli(APP_DIR, 'timers');
    dataDir = await initializedPgliteDir('timers-cli-');
  }, 180_000);
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('runs one timer or all of them on a PGlite data directory, prints what moved as JSON and exits 0', { timeout: 120_000 }, async () => {
    const env = { NODE_ENV: 'development', DATA_DIR: dataDir, LOG_LEVEL: 'silent', SEED_REFERENCE_DATA: 'false' };
    const seeding = await openDatabase(loadConfig(env));
    let requestId: number;
    try {
      // No app here: the accounts are made by the users service, the rest by the fixtures on this database.
      const handle = { database: seeding } as unknown as TestApp;
      const recorder = createActivityRecorder({ db: seeding.db });
      const account = (role: 'client' | 'prestataire', n: number) =>
        createUsersService({ db: seeding.db, recorder, outbox: createOutbox({ db: seeding.db }) }).createAccount(systemActor, {
          role,
          email: `${role}${n}@cli.test`,
          password: 'correct horse battery',
          firstName: 'Cli',
          lastName: 'Test',
          emailVerified: true,
          ...(role === 'prestataire'
            ? { profile: { businessName: 'Garage CLI', siret: validSiret(9_001), address: '1 rue', postalCode: '69001', city: 'Lyon' } }
            : {}),
        });
      const client = await account('client', 1);
      const prestataire = await account('prestataire', 2);
      const { request } = await aRequest(handle, { client, status: 'quoted', expiresAt: ago(HOUR) });
      requestId = request.id;
      await anOffer(handle, request, { prestataire, validUntil: ago(HOUR) });
    } finally {
      await seeding.close();
    }

    const offerOnly = await runNode(APP_DIR, [cli, 'offer-expiry'], env);
    expect(offerOnly.code, offerOnly.stderr).toBe(0);
    const first = JSON.parse(offerOnly.stdout.trim()) as { ok: boolean; moved: Record<string, Record<string, number[]>> };
    expect(first).toMatchObject({ job: 'timers', ok: true, timers: ['offer-expiry'] });
    expect(first.moved.offer_expiry?.offers).toHaveLength(1);
    expect(first.moved.request_expiry).toBeUndefined();

    const all = await runNode(APP_DIR, [cli, 'all'], env);
    expect(all.code, all.stderr).toBe(0);
    const second = JSON.parse(all.stdout.trim()) as { moved: Record<string, Record<string, number[]>> };
    expect(second.moved).toEqual({
      request_expiry: { service_requests: [requestId], offers: [] },
      offer_expiry: { offers: [] },
      auto_complete: { appointments: [], service_requests: [] },
    });
  });

  it('exits 2 with the usage on an unknown timer', async () => {
    const result = await runNode(APP_DIR, [cli, 'everything'], { NODE_ENV: 'development', DATA_DIR: dataDir });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(JSON.parse(result.stderr.trim())).toMatchObject({ job: 'timers', ok: false, error: expect.stringContaining('request-expiry|offer-expiry|auto-complete|all') });
  });

  it('is the package script `timers`', () => {
    const pkg = JSON.parse(readFileSync(join(APP_DIR, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.timers).toBe('node dist/cli/timers.js');
  });
});
