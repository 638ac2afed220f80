import { Agent } from 'node:https';
import { eq } from 'drizzle-orm';
import webpush from 'web-push';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { deviceTokens } from '../src/db/schema/index.js';
import { bearer, buildTestApp, createClient, createPrestataire, type TestApp, type TestUser } from './helpers.js';
import { deliverAll } from './outbox-helpers.js';
import { browserKeys, startPushService, verifyVapid } from './push-service.js';

let t: TestApp;
let pushService: Awaited<ReturnType<typeof startPushService>>;
const vapid = webpush.generateVAPIDKeys();

beforeAll(async () => {
  pushService = await startPushService();
  t = await buildTestApp(
    { OUTBOX_INTERVAL_MS: '0', VAPID_PUBLIC_KEY: vapid.publicKey, VAPID_PRIVATE_KEY: vapid.privateKey, VAPID_SUBJECT: 'mailto:ops@marketplace.test' },
    { pushAgent: new Agent({ ca: pushService.ca }) },
  );
});
afterAll(async () => {
  await t?.close();
  await pushService?.close();
});

const api = (method: 'GET' | 'POST', url: string, token: string, payload?: Record<string, unknown>) =>
  t.app.inject({ method, url: `/api/v1${url}`, headers: bearer(token), ...(payload ? { payload } : {}) });

async function subscribe(user: TestUser, path: string) {
  const browser = browserKeys();
  const res = await api('POST', '/auth/me/device-token', user.token, { kind: 'webpush', subscription: { endpoint: `${pushService.origin}${path}`, keys: browser.keys } });
  expect(res.statusCode).toBe(201);
  return { browser, deviceId: res.json().data.id as number };
}

describe('web push', () => {
  it('delivers each new notification to the user’s browsers, encrypted for each, and forgets a subscription answered 410', async () => {
    const client = await createClient(t, { lang: 'en' });
    const prestataire = await createPrestataire(t, { status: 'validated' });
    const laptop = await subscribe(prestataire, '/ok/laptop');
    const expired = await subscribe(prestataire, '/gone/old-phone');
    // Another user's browser receives nothing of it.
    await subscribe(client, '/ok/client');

    const res = await api('POST', '/conversations', client.token, { participant_id: prestataire.user.id, message: 'Hello, free on Thursday?' });
    expect(res.statusCode).toBe(201);
    await deliverAll(t, ['notifications', 'web-push']);

    const delivered = pushService.received.filter((r) => r.path.startsWith('/ok/laptop'));
    expect(delivered).toHaveLength(1);
    const push = delivered[0]!;
    expect(push.headers['content-encoding']).toBe('aes128gcm');
    expect(Number(push.headers.ttl)).toBeGreaterThan(0);
    verifyVapid(String(push.headers.authorization), { publicKey: vapid.publicKey, audience: pushService.origin });
    const notification = JSON.parse(laptop.browser.decrypt(push.body));
    expect(notification).toMatchObject({
      type: 'message.created',
      title: 'Nouveau message',
      body: 'Hello, free on Thursday?',
      data: { conversation_id: res.json().data.id },
      read_at: null,
    });
    expect(notification.id).toEqual(expect.any(Number));
    expect(pushService.received.some((r) => r.path.startsWith('/ok/client'))).toBe(false);

    // The expired subscription was tried once and removed; the live one stays.
    expect(pushService.received.filter((r) => r.path.startsWith('/gone/'))).toHaveLength(1);
    const left = await t.database.db.select({ id: deviceTokens.id }).from(deviceTokens).where(eq(deviceTokens.userId, prestataire.user.id));
    expect(left.map((d) => d.id)).toEqual([laptop.deviceId]);
    expect(expired.deviceId).not.toBe(laptop.deviceId);

    // Delivered once: draining again sends nothing more.
    const before = pushService.received.length;
    await deliverAll(t, ['notifications', 'web-push']);
    expect(pushService.received.length).toBe(before);
  });

  it('wants all three VAPID settings or none, and well-formed keys', () => {
    const base = { NODE_ENV: 'test', DATA_DIR: 'memory://' };
    expect(() => loadConfig({ ...base, VAPID_PUBLIC_KEY: vapid.publicKey })).toThrow(/set all three or none/);
    expect(() => loadConfig({ ...base, VAPID_PUBLIC_KEY: 'short', VAPID_PRIVATE_KEY: vapid.privateKey, VAPID_SUBJECT: 'mailto:a@b.c' })).toThrow(/VAPID_PUBLIC_KEY/);
    expect(() => loadConfig({ ...base, VAPID_PUBLIC_KEY: vapid.publicKey, VAPID_PRIVATE_KEY: vapid.privateKey, VAPID_SUBJECT: 'ops@b.c' })).toThrow(/VAPID_SUBJECT/);
    expect(loadConfig({ ...base, VAPID_PUBLIC_KEY: vapid.publicKey, VAPID_PRIVATE_KEY: vapid.privateKey, VAPID_SUBJECT: 'mailto:a@b.c' }).push.vapid).toEqual({
      publicKey: vapid.publicKey,
      privateKey: vapid.privateKey,
      subject: 'mailto:a@b.c',
    });
  });

  it('is off without VAPID keys', async () => {
    const plain = await buildTestApp({ OUTBOX_INTERVAL_MS: '0' });
    try {
      expect(Object.keys(await plain.app.outboxDispatch.drain())).not.toContain('web-push');
    } finally {
      await plain.close();
    }
  });
});
