import { Agent } from 'node:https';
import { and, eq, inArray, isNull, sql } from 'drizzle-orm';
import webpush from 'web-push';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { activityLog, broadcasts, cities, notifications, prestataireProfiles, serviceRequests, users } from '../src/db/schema/index.js';
import { nonAdminTokens } from './admin-lifecycle-fixtures.js';
import { aRequest } from './appointment-fixtures.js';
import {
  bearer,
  buildTestApp,
  createAdmin,
  createClient,
  createPrestataire,
  expectAdminOnly,
  expectError,
  unique,
  type NonAdminTokens,
  type TestApp,
  type TestUser,
} from './helpers.js';
import { startSmtpSink } from './mail-sink.js';
import { browserKeys, startPushService } from './push-service.js';

const BATCH = 2;
const vapid = webpush.generateVAPIDKeys();

let t: TestApp;
let admin: TestUser;
let tokens: NonAdminTokens;
let sink: Awaited<ReturnType<typeof startSmtpSink>>;
let pushService: Awaited<ReturnType<typeof startPushService>>;

beforeAll(async () => {
  sink = await startSmtpSink();
  pushService = await startPushService();
  t = await buildTestApp(
    {
      RATE_LIMIT_AUTHENTICATED: '100000',
      BROADCAST_BATCH_SIZE: String(BATCH),
      SMTP_URL: sink.url,
      VAPID_PUBLIC_KEY: vapid.publicKey,
      VAPID_PRIVATE_KEY: vapid.privateKey,
      VAPID_SUBJECT: 'mailto:ops@marketplace.test',
    },
    { pushAgent: new Agent({ ca: pushService.ca }) },
  );
  admin = await createAdmin(t);
  tokens = await nonAdminTokens(t);
});
afterAll(async () => {
  await t?.close();
  await sink?.close();
  await pushService?.close();
});

const db = () => t.database.db;
const send = (payload: unknown, token = admin.token) =>
  t.app.inject({ method: 'POST', url: '/api/v1/admin/broadcast', headers: bearer(token), payload: payload as object });
const show = (id: number) => t.app.inject({ method: 'GET', url: `/api/v1/admin/broadcasts/${id}`, headers: bearer(admin.token) });

async function aCity(): Promise<number> {
  const n = unique();
  const [city] = await db()
    .insert(cities)
    .values({ inseeCode: `T${String(n).padStart(4, '0')}`, name: `Ville ${n}`, postalCodes: ['69000'], departmentCode: '69', latitude: 45.75, longitude: 4.85 })
    .returning();
  return city!.id;
}

/** A client who made a service request in the city. */
async function aClientIn(cityId: number, opts: Parameters<typeof createClient>[1] = {}) {
  const client = await createClient(t, opts);
  const { request } = await aRequest(t, { client });
  await db().update(serviceRequests).set({ cityId }).where(eq(serviceRequests.id, request.id));
  return client;
}

async function aPrestataireIn(cityId: number) {
  const p = await createPrestataire(t, { status: 'validated' });
  await db().update(prestataireProfiles).set({ cityId }).where(eq(prestataireProfiles.userId, p.user.id));
  return p;
}

/** The live accounts of some roles, by id: who an audience without a city reaches. */
async function liveIds(roles: ('client' | 'prestataire')[]): Promise<number[]> {
  const rows = await db()
    .select({ id: users.id })
    .from(users)
    .where(and(inArray(users.role, roles), eq(users.status, 'active'), isNull(users.deletedAt)))
    .orderBy(users.id);
  return rows.map((r) => r.id);
}

/** The users notified of a broadcast, by id, once per notification (a duplicate would show twice). */
async function notified(broadcastId: number): Promise<number[]> {
  const rows = await db().select({ userId: notifications.userId, data: notifications.data }).from(notifications).where(eq(notifications.type, 'broadcast'));
  return rows
    .filter((r) => r.data?.broadcast_id === broadcastId)
    .map((r) => r.userId)
    .sort((a, b) => a - b);
}

async function created(payload: Record<string, unknown>) {
  const res = await send(payload);
  expect(res.statusCode, res.body).toBe(202);
  return res.json().data as { id: number; total_recipients: number; status: string };
}

describe('broadcasts: access and input', () => {
  it('is for administrators only', async () => {
    const body = { audience: 'all', title: 'Hello', body: 'World' };
    await expectAdminOnly(t, tokens, 'POST', '/admin/broadcast', body);
    await expectAdminOnly(t, tokens, 'GET', '/admin/broadcasts');
    await expectAdminOnly(t, tokens, 'GET', '/admin/broadcasts/1');
    expect(await db().select().from(broadcasts)).toEqual([]);
  });

  it('refuses a bad audience, an empty title or body, an unknown city and bad data with 422', async () => {
    const body = { audience: 'clients', title: 'Hello', body: 'World' };
    expect(expectError(await send({ ...body, audience: 'admins' }), 422, 'validation_error').errors).toHaveProperty('audience');
    expect(expectError(await send({ ...body, audience: undefined }), 422, 'validation_error').errors).toHaveProperty('audience');
    expect(expectError(await send({ ...body, title: '  ' }), 422, 'validation_error').errors).toHaveProperty('title');
    expect(expectError(await send({ ...body, title: 'x'.repeat(201) }), 422, 'validation_error').errors).toHaveProperty('title');
    expect(expectError(await send({ ...body, body: '' }), 422, 'validation_error').errors).toHaveProperty('body');
    expect(expectError(await send({ ...body, city_id: 0 }), 422, 'validation_error').errors).toHaveProperty('city_id');
    expect(expectError(await send({ ...body, city_id: 987_654 }), 422, 'validation_error').errors).toEqual({ city_id: ['Unknown city'] });
    expect(expectError(await send({ ...body, send_email: 'yes' }), 422, 'validation_error').errors).toHaveProperty('send_email');
    expect(expectError(await send({ ...body, data: [1, 2] }), 422, 'validation_error').errors).toHaveProperty('data');
    expect(expectError(await send({ ...body, data: { note: 'x'.repeat(5000) } }), 422, 'validation_error').errors).toHaveProperty('data');
    expect(await db().select().from(broadcasts)).toEqual([]);

    expectError(await show(999_999), 404, 'not_found');
    expectError(await show(0 as number), 422, 'validation_error');
  });
});

describe('broadcasts: delivery', () => {
  it('queues with the recipients counted (202), then the job notifies every live client once and completes', async () => {
    // Not reached: a suspended client, a deleted one, prestataires, administrators.
    const suspended = await createClient(t);
    await db().update(users).set({ status: 'suspended' }).where(eq(users.id, suspended.user.id));
    const deleted = await createClient(t);
    await db().update(users).set({ deletedAt: new Date() }).where(eq(users.id, deleted.user.id));
    const reader = await createClient(t);
    await createClient(t);
    const expected = await liveIds(['client']);
    expect(expected).toContain(reader.user.id);
    expect(expected.length).toBeGreaterThan(BATCH);

    const res = await send({ audience: 'clients', title: 'Maintenance', body: 'Ce soir à 22 h.', data: { url: '/news/1', broadcast_id: 'spoofed' } });
    expect(res.statusCode, res.body).toBe(202);
    const broadcast = res.json().data;
    expect(broadcast).toMatchObject({
      audience: 'clients',
      city_id: null,
      status: 'queued',
      total_recipients: expected.length,
      sent_count: 0,
      send_email: false,
      created_by: admin.user.id,
      started_at: null,
      completed_at: null,
      error: null,
    });
    expect((await show(broadcast.id)).json().data).toEqual(broadcast);
    const [logged] = await db().select().from(activityLog).where(eq(activityLog.action, 'broadcast.created'));
    expect(logged).toMatchObject({ actorId: admin.user.id, subjectType: 'broadcast', subjectId: broadcast.id });

    const batches = await t.app.broadcastDelivery.drain();
    expect(batches).toBe(Math.floor(expected.length / BATCH) + 1);
    expect(await notified(broadcast.id)).toEqual(expected);

    const done = (await show(broadcast.id)).json().data;
    expect(done).toMatchObject({ status: 'completed', sent_count: expected.length, error: null });
    expect(done.started_at).toEqual(expect.any(String));
    expect(done.completed_at).toEqual(expect.any(String));

    // The client reads it in the inbox, with the broadcast's id (never the one in `data`).
    const inbox = await t.app.inject({ method: 'GET', url: '/api/v1/notifications', headers: bearer(reader.token) });
    expect(inbox.json().data).toContainEqual(
      expect.objectContaining({ type: 'broadcast', title: 'Maintenance', body: 'Ce soir à 22 h.', data: { url: '/news/1', broadcast_id: broadcast.id } }),
    );
    // Nothing left to send; no e-mail was asked for.
    expect(await t.app.broadcastDelivery.drain()).toBe(0);
    await t.app.mailer.idle();
    expect(sink.messages.filter((m) => m.subject === 'Maintenance')).toEqual([]);

    const list = await t.app.inject({ method: 'GET', url: '/api/v1/admin/broadcasts', headers: bearer(admin.token) });
    expect(list.statusCode).toBe(200);
    expect(list.json().data[0]).toMatchObject({ id: broadcast.id, status: 'completed' });
    expect(list.json().meta).toMatchObject({ current_page: 1, total: 1 });
  });

  it('sends in batches that move a cursor, readable as progress', async () => {
    const expected = await liveIds(['prestataire']);
    while (expected.length < 2 * BATCH + 1) expected.push((await createPrestataire(t)).user.id);
    const { id } = await created({ audience: 'prestataires', title: 'Batches', body: 'One by one' });

    const first = await t.app.broadcastDelivery.runOnce();
    expect(first).toMatchObject({ notified: BATCH, broadcast: { id, status: 'sending', sentCount: BATCH, lastUserId: expected[BATCH - 1] } });
    const progress = (await show(id)).json().data;
    expect(progress).toMatchObject({ status: 'sending', sent_count: BATCH, total_recipients: expected.length, completed_at: null });
    expect(progress.started_at).toEqual(expect.any(String));
    expect(await notified(id)).toEqual(expected.slice(0, BATCH));

    await t.app.broadcastDelivery.drain();
    expect(await notified(id)).toEqual(expected);
    expect((await show(id)).json().data).toMatchObject({ status: 'completed', sent_count: expected.length });
  });

  it('reaches by city the prestataires whose profile is there and the clients who made a request there; e-mails and pushes them', async () => {
    const lyon = await aCity();
    const grenoble = await aCity();
    const clientFr = await aClientIn(lyon);
    const clientEn = await aClientIn(lyon, { lang: 'en' });
    const elsewhere = await aClientIn(grenoble);
    const garage = await aPrestataireIn(lyon);
    await aPrestataireIn(grenoble);
    const browser = browserKeys();
    const sub = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/me/device-token',
      headers: bearer(clientEn.token),
      payload: { kind: 'webpush', subscription: { endpoint: `${pushService.origin}/ok/broadcast`, keys: browser.keys } },
    });
    expect(sub.statusCode).toBe(201);

    const toClients = await created({ audience: 'clients', city_id: lyon, title: 'Lyon: new garages', body: 'First paragraph.\n\nSecond one.', send_email: true });
    const toPrestataires = await created({ audience: 'prestataires', city_id: lyon, title: 'Lyon pros', body: 'Hello pros' });
    const toAll = await created({ audience: 'all', city_id: lyon, title: 'Lyon all', body: 'Hello all' });
    expect([toClients.total_recipients, toPrestataires.total_recipients, toAll.total_recipients]).toEqual([2, 1, 3]);
    await t.app.broadcastDelivery.drain();

    const byId = (...us: TestUser[]) => us.map((u) => u.user.id).sort((a, b) => a - b);
    expect(await notified(toClients.id)).toEqual(byId(clientFr, clientEn));
    expect(await notified(toPrestataires.id)).toEqual(byId(garage));
    expect(await notified(toAll.id)).toEqual(byId(clientFr, clientEn, garage));
    expect((await notified(toClients.id)).includes(elsewhere.user.id)).toBe(false);

    // E-mail in each recipient's language, only for the broadcast that asked for it.
    await t.app.mailer.idle();
    const [fr] = sink.to(clientFr.email);
    expect(sink.to(clientFr.email)).toHaveLength(1);
    expect(fr).toMatchObject({ subject: 'Lyon: new garages' });
    expect(fr!.text).toContain('Bonjour Camille,');
    expect(fr!.text).toContain('First paragraph.\n\nSecond one.');
    const [en] = sink.to(clientEn.email);
    expect(en!.text).toContain('Hello Camille,');
    expect(sink.to(garage.email)).toEqual([]);
    expect(sink.to(elsewhere.email)).toEqual([]);

    // One push per broadcast reaching the subscribed client, encrypted for its browser.
    const pushes = pushService.received.filter((r) => r.path === '/ok/broadcast');
    expect(pushes).toHaveLength(2);
    const shown = pushes.map((p) => JSON.parse(browser.decrypt(p.body)) as { type: string; title: string; data: { broadcast_id: number } });
    expect(shown.map((s) => s.data.broadcast_id).sort((a, b) => a - b)).toEqual([toClients.id, toAll.id]);
    expect(shown.every((s) => s.type === 'broadcast')).toBe(true);
  });

  it('resumes after a restart where the last committed batch stopped, notifying nobody twice', async () => {
    const expected = await liveIds(['client', 'prestataire']);
    const { id } = await created({ audience: 'all', title: 'Restart', body: 'Resumed' });
    expect(await t.app.broadcastDelivery.runOnce()).toMatchObject({ notified: BATCH });

    // Another instance on the same database, as after a restart, sends the rest.
    const restarted = await buildApp(t.config, { database: t.database });
    try {
      await restarted.ready();
      const batches = await restarted.broadcastDelivery.drain();
      expect(batches).toBe(Math.floor((expected.length - BATCH) / BATCH) + 1);
    } finally {
      await restarted.close();
    }
    expect(await notified(id)).toEqual(expected);
    expect((await show(id)).json().data).toMatchObject({ status: 'completed', sent_count: expected.length });

    // Even a cursor lost (set back to the start) notifies nobody again: one notification per user and broadcast.
    await db().update(broadcasts).set({ status: 'sending', lastUserId: 0, completedAt: null }).where(eq(broadcasts.id, id));
    await t.app.broadcastDelivery.drain();
    expect(await notified(id)).toEqual(expected);
    expect((await show(id)).json().data).toMatchObject({ status: 'completed', sent_count: expected.length });
  });

  it.skipIf(!process.env.TEST_DATABASE_URL)('two instances sending at once notify every recipient exactly once', async () => {
    const expected = await liveIds(['client', 'prestataire']);
    const ids = [
      (await created({ audience: 'all', title: 'Race 1', body: 'x' })).id,
      (await created({ audience: 'all', title: 'Race 2', body: 'x' })).id,
    ];
    const other = await buildApp(t.config, { database: t.database });
    try {
      await other.ready();
      const worker = async (run: () => Promise<unknown>) => {
        while ((await run()) !== null);
      };
      await Promise.all([
        worker(() => t.app.broadcastDelivery.runOnce()),
        worker(() => other.broadcastDelivery.runOnce()),
        worker(() => t.app.broadcastDelivery.runOnce()),
        worker(() => other.broadcastDelivery.runOnce()),
      ]);
      // A worker that found everything locked stopped early; whatever is left is sent now.
      await t.app.broadcastDelivery.drain();
    } finally {
      await other.close();
    }
    for (const id of ids) {
      expect(await notified(id)).toEqual(expected);
      expect((await show(id)).json().data).toMatchObject({ status: 'completed', sent_count: expected.length });
    }
  });
});

describe('broadcasts: failures', () => {
  it('retries a batch that failed on a transient error, marks failed one that cannot succeed, and keeps sending the others', async () => {
    // A trigger makes the database refuse some notifications: "Flaky" ones while the switch is on
    // (a serialization failure, transient), "Poison" ones always (a data exception).
    await db().execute(sql`create table broadcast_test_switch (on_ boolean)`);
    await db().execute(sql`insert into broadcast_test_switch values (true)`);
    await db().execute(sql`
      create function broadcast_test_refuse() returns trigger language plpgsql as $$
      begin
        if new.title = 'Poison' then raise exception 'poisoned batch' using errcode = '22023'; end if;
        if new.title = 'Flaky' and exists (select 1 from broadcast_test_switch) then
          raise exception 'could not serialize' using errcode = '40001';
        end if;
        return new;
      end $$`);
    await db().execute(sql`create trigger broadcast_test_refuse before insert on notifications for each row execute function broadcast_test_refuse()`);
    try {
      while ((await liveIds(['client'])).length <= BATCH) await createClient(t);
      const expected = await liveIds(['client']);
      const poison = await created({ audience: 'clients', title: 'Poison', body: 'x' });
      const flaky = await created({ audience: 'clients', title: 'Flaky', body: 'x' });
      const fine = await created({ audience: 'clients', title: 'Fine', body: 'x' });

      await expect(t.app.broadcastDelivery.runOnce()).rejects.toThrow();
      expect((await show(poison.id)).json().data).toMatchObject({ status: 'failed', sent_count: 0, error: 'SQLSTATE 22023: poisoned batch' });
      await expect(t.app.broadcastDelivery.runOnce()).rejects.toThrow();
      expect((await show(flaky.id)).json().data).toMatchObject({ status: 'queued', sent_count: 0, error: 'SQLSTATE 40001: could not serialize' });
      expect(await notified(flaky.id)).toEqual([]);

      // The flaky one fails again, but the queue moves on: the one touched longest ago goes first.
      await expect(t.app.broadcastDelivery.drain()).rejects.toThrow();
      expect((await show(fine.id)).json().data).toMatchObject({ status: 'sending', sent_count: BATCH });

      await db().execute(sql`delete from broadcast_test_switch`);
      await t.app.broadcastDelivery.drain();
      for (const id of [flaky.id, fine.id]) {
        expect(await notified(id)).toEqual(expected);
        expect((await show(id)).json().data).toMatchObject({ status: 'completed', sent_count: expected.length, error: null });
      }
      expect(await notified(poison.id)).toEqual([]);
      expect((await show(poison.id)).json().data.status).toBe('failed');
    } finally {
      await db().execute(sql`drop trigger broadcast_test_refuse on notifications`);
      await db().execute(sql`drop function broadcast_test_refuse()`);
      await db().execute(sql`drop table broadcast_test_switch`);
    }
  });
});

describe('broadcasts: configuration', () => {
  it('runs the job every 2 s by default (never under test unless set), 200 users a batch', () => {
    const base = { DATA_DIR: 'memory://' };
    expect(loadConfig({ ...base, NODE_ENV: 'development' }).broadcasts).toEqual({ intervalMs: 2000, batchSize: 200 });
    expect(loadConfig({ ...base, NODE_ENV: 'test' }).broadcasts).toEqual({ intervalMs: 0, batchSize: 200 });
    expect(loadConfig({ ...base, NODE_ENV: 'test', BROADCAST_INTERVAL_MS: '250', BROADCAST_BATCH_SIZE: '50' }).broadcasts).toEqual({
      intervalMs: 250,
      batchSize: 50,
    });
    expect(() => loadConfig({ ...base, NODE_ENV: 'test', BROADCAST_BATCH_SIZE: '0' })).toThrow(/BROADCAST_BATCH_SIZE/);
  });
});
