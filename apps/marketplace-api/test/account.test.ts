import { createECDH, randomBytes } from 'node:crypto';
import { and, eq, inArray } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, deviceTokens, sessions, users } from '../src/db/schema/index.js';
import { bearer, buildTestApp, createAdmin, createClient, createPrestataire, expectError, unique, type TestApp } from './helpers.js';
import { startSmtpSink } from './mail-sink.js';

let sink: Awaited<ReturnType<typeof startSmtpSink>>;
let t: TestApp;

beforeAll(async () => {
  sink = await startSmtpSink();
  // A small upload limit, so that "too large" needs only a few kilobytes.
  t = await buildTestApp({
    SMTP_URL: sink.url,
    APP_URL: 'https://app.example',
    UPLOAD_MAX_BYTES: '2048',
    RATE_LIMIT_PUBLIC: '100000',
    RATE_LIMIT_AUTHENTICATED: '100000',
  });
});
afterAll(async () => {
  await t.close();
  await sink.close();
});

const PNG_1X1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
const JPEG_1X1 = Buffer.from(
  '/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAP//////////////////////////////////////////////////////////////////////////////////////wgALCAABAAEBAREA/8QAFBABAAAAAAAAAAAAAAAAAAAAAP/aAAgBAQABPxA=',
  'base64',
);

type Json = Record<string, unknown> | undefined;
const api = (method: 'GET' | 'PUT' | 'POST' | 'DELETE', url: string, token?: string, payload?: Json) =>
  t.app.inject({ method, url: `/api/v1${url}`, headers: token ? bearer(token) : {}, ...(payload === undefined ? {} : { payload }) });
const me = (token: string) => api('GET', '/auth/me', token);
const login = (email: string, password: string) => api('POST', '/auth/login', undefined, { email, password });

function fieldErrors(res: LightMyRequestResponse) {
  return expectError(res, 422, 'validation_error').errors ?? {};
}

/** A multipart/form-data body with the given parts. */
function multipart(parts: { name: string; filename?: string; type?: string; data: Buffer | string }[]) {
  const boundary = `----vitest${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${part.filename ? `; filename="${part.filename}"` : ''}`;
    const head = `--${boundary}\r\nContent-Disposition: ${disposition}\r\n${part.type ? `Content-Type: ${part.type}\r\n` : ''}\r\n`;
    chunks.push(Buffer.from(head), Buffer.isBuffer(part.data) ? part.data : Buffer.from(part.data), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

function uploadPhoto(token: string | undefined, parts: Parameters<typeof multipart>[0]) {
  const body = multipart(parts);
  return t.app.inject({
    method: 'POST',
    url: '/api/v1/auth/me/photo',
    headers: { ...body.headers, ...(token ? bearer(token) : {}) },
    payload: body.payload,
  });
}

function sessionIdOf(token: string): string {
  return (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { sid: string }).sid;
}

async function ageSession(token: string, minutes: number) {
  await t.database.db
    .update(sessions)
    .set({ createdAt: new Date(Date.now() - minutes * 60_000) })
    .where(eq(sessions.id, sessionIdOf(token)));
}

async function userRow(id: number) {
  const [row] = await t.database.db.select().from(users).where(eq(users.id, id));
  return row!;
}

async function activity(userId: number, action: string) {
  return t.database.db
    .select()
    .from(activityLog)
    .where(and(eq(activityLog.subjectId, userId), eq(activityLog.action, action)))
    .orderBy(activityLog.id);
}

describe('GET /auth/me', () => {
  it('answers the client without a business profile', async () => {
    const client = await createClient(t);
    const res = await me(client.token);
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({ id: client.user.id, role: 'client', email: client.email, prestataire: null, has_password: true });
    expect(res.body).not.toMatch(/argon2/);
  });

  it('answers a prestataire with its business profile', async () => {
    const prestataire = await createPrestataire(t, { status: 'validated' });
    const { data } = (await me(prestataire.token)).json();
    expect(data.prestataire).toMatchObject({ siret: prestataire.profile!.siret, validation_status: 'validated', currency: 'EUR' });
  });

  it('answers 401 without a token, with a forged one, and to a suspended or banned user', async () => {
    expectError(await api('GET', '/auth/me'), 401, 'unauthenticated');
    expectError(await me('eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIiwic2lkIjoieCJ9.c2lnbmF0dXJl'), 401, 'unauthenticated');
    for (const status of ['suspended', 'banned'] as const) {
      const client = await createClient(t);
      await t.database.db.update(users).set({ status }).where(eq(users.id, client.user.id));
      expectError(await me(client.token), 401, 'unauthenticated');
    }
  });
});

describe('PUT /auth/me', () => {
  it('updates only the given fields and logs what changed', async () => {
    const client = await createClient(t, { phone: '+33611111111' });
    const res = await api('PUT', '/auth/me', client.token, { first_name: '  Camille-Anne ', role: 'admin', status: 'banned' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({
      first_name: 'Camille-Anne',
      last_name: client.user.lastName,
      phone: '+33611111111',
      email: client.email,
      role: 'client',
      status: 'active',
      email_verified: true,
    });
    const entries = await activity(client.user.id, 'user.profile_updated');
    expect(entries).toEqual([
      expect.objectContaining({ actorId: client.user.id, before: { first_name: 'Camille' }, after: { first_name: 'Camille-Anne' } }),
    ]);
  });

  it('logs nothing when nothing changes', async () => {
    const client = await createClient(t);
    const res = await api('PUT', '/auth/me', client.token, { first_name: client.user.firstName, last_name: client.user.lastName });
    expect(res.statusCode).toBe(200);
    expect(await api('PUT', '/auth/me', client.token, {}).then((r) => r.statusCode)).toBe(200);
    expect(await activity(client.user.id, 'user.profile_updated')).toEqual([]);
  });

  it('normalises the phone, and clears it with null', async () => {
    const client = await createClient(t);
    const set = await api('PUT', '/auth/me', client.token, { phone: '07 98 76 54 32' });
    expect(set.json().data.phone).toBe('+33798765432');
    const cleared = await api('PUT', '/auth/me', client.token, { phone: null });
    expect(cleared.json().data.phone).toBeNull();
    const entries = await activity(client.user.id, 'user.profile_updated');
    expect(entries.map((e) => [e.before, e.after])).toEqual([
      [{ phone: null }, { phone: '+33798765432' }],
      [{ phone: '+33798765432' }, { phone: null }],
    ]);
  });

  it('answers 409 on an e-mail taken by another account, and changes nothing', async () => {
    const client = await createClient(t);
    const other = await createClient(t);
    const body = expectError(
      await api('PUT', '/auth/me', client.token, { email: other.email, first_name: 'Zoé', current_password: client.password }),
      409,
      'conflict',
    );
    expect(body.errors?.email).toEqual(['The email has already been taken']);
    expect(await userRow(client.user.id)).toMatchObject({ email: client.email, firstName: client.user.firstName, pendingEmail: null });
  });

  it('answers 422 on each invalid field', async () => {
    const client = await createClient(t);
    const cases: [Record<string, unknown>, string][] = [
      [{ email: 'nope' }, 'email'],
      [{ first_name: '' }, 'first_name'],
      [{ last_name: 'x'.repeat(101) }, 'last_name'],
      [{ phone: 'call me' }, 'phone'],
      [{ first_name: 42 }, 'first_name'],
    ];
    for (const [body, field] of cases) {
      expect(Object.keys(fieldErrors(await api('PUT', '/auth/me', client.token, body))), JSON.stringify(body)).toEqual([field]);
    }
  });

  it('answers 401 without a token', async () => {
    expectError(await api('PUT', '/auth/me', undefined, { first_name: 'X' }), 401, 'unauthenticated');
  });
});

describe('PUT /auth/me/lang', () => {
  it('changes the language, which later e-mails use', async () => {
    const client = await createClient(t);
    const res = await api('PUT', '/auth/me/lang', client.token, { lang: 'en' });
    expect(res.statusCode).toBe(200);
    expect(res.json().data.lang).toBe('en');
    const next = `english${unique()}@example.test`;
    await api('PUT', '/auth/me', client.token, { email: next, current_password: client.password });
    await t.app.mailer.idle();
    expect(sink.to(next)[0]?.subject).toBe('Confirm your new e-mail address');
  });

  it('answers 422 on an unknown language and 401 without a token', async () => {
    const client = await createClient(t);
    expect(Object.keys(fieldErrors(await api('PUT', '/auth/me/lang', client.token, { lang: 'de' })))).toEqual(['lang']);
    expect(Object.keys(fieldErrors(await api('PUT', '/auth/me/lang', client.token, {})))).toEqual(['lang']);
    expectError(await api('PUT', '/auth/me/lang', undefined, { lang: 'en' }), 401, 'unauthenticated');
  });
});

describe('POST /auth/me/photo', () => {
  it('stores the photo, serves it back, and replaces the previous one', async () => {
    const client = await createClient(t);
    const first = await uploadPhoto(client.token, [{ name: 'photo', filename: 'me.png', type: 'image/png', data: PNG_1X1 }]);
    expect(first.statusCode, first.body).toBe(200);
    const firstUrl = first.json().data.photo_url as string;
    expect(firstUrl).toMatch(/^\/api\/v1\/media\/public\/avatars\/\d{4}\/\d{2}\/[0-9a-f-]+\.png$/);
    const served = await t.app.inject({ method: 'GET', url: firstUrl });
    expect(served.statusCode).toBe(200);
    expect(served.headers['content-type']).toBe('image/png');
    expect(served.rawPayload.equals(PNG_1X1)).toBe(true);

    // The type is sniffed from the bytes, not taken from the client's claim.
    const second = await uploadPhoto(client.token, [{ name: 'photo', filename: 'me.png', type: 'image/png', data: JPEG_1X1 }]);
    expect(second.statusCode, second.body).toBe(200);
    const secondUrl = second.json().data.photo_url as string;
    expect(secondUrl).toMatch(/\.jpg$/);
    expect((await t.app.inject({ method: 'GET', url: secondUrl })).rawPayload.equals(JPEG_1X1)).toBe(true);
    expectError(await t.app.inject({ method: 'GET', url: firstUrl }), 404, 'not_found');
    expect((await me(client.token)).json().data.photo_url).toBe(secondUrl);
  });

  it('answers 422 when the file is not an image or the photo field is missing', async () => {
    const client = await createClient(t);
    const notImage = await uploadPhoto(client.token, [{ name: 'photo', filename: 'me.png', type: 'image/png', data: 'just some text, not a picture' }]);
    expect(Object.keys(fieldErrors(notImage))).toEqual(['photo']);
    const pdf = await uploadPhoto(client.token, [{ name: 'photo', filename: 'cv.pdf', data: Buffer.from('%PDF-1.4\n%âãÏÓ\n1 0 obj\n<<>>\nendobj\n') }]);
    expect(Object.keys(fieldErrors(pdf))).toEqual(['photo']);
    const otherField = await uploadPhoto(client.token, [{ name: 'avatar', filename: 'me.png', data: PNG_1X1 }]);
    expect(Object.keys(fieldErrors(otherField))).toEqual(['photo']);
    const noFile = await uploadPhoto(client.token, [{ name: 'caption', data: 'hello' }]);
    expect(Object.keys(fieldErrors(noFile))).toEqual(['photo']);
    const twoFiles = await uploadPhoto(client.token, [
      { name: 'photo', filename: 'a.png', data: PNG_1X1 },
      { name: 'photo', filename: 'b.png', data: PNG_1X1 },
    ]);
    expectError(twoFiles, 422, 'validation_error');
    expect((await userRow(client.user.id)).photoKey).toBeNull();
  });

  it('answers 413 beyond the upload limit', async () => {
    const client = await createClient(t);
    const big = Buffer.concat([PNG_1X1, Buffer.alloc(4096, 7)]);
    expectError(await uploadPhoto(client.token, [{ name: 'photo', filename: 'big.png', data: big }]), 413, 'payload_too_large');
    expect((await userRow(client.user.id)).photoKey).toBeNull();
  });

  it('answers 400 to a request that is not multipart, and 401 without a token', async () => {
    const client = await createClient(t);
    expectError(await api('POST', '/auth/me/photo', client.token, { photo: 'x' }), 400, 'bad_request');
    expectError(await uploadPhoto(undefined, [{ name: 'photo', filename: 'me.png', data: PNG_1X1 }]), 401, 'unauthenticated');
  });
});

describe('POST /auth/me/device-token', () => {
  function webPush(endpoint = `https://fcm.googleapis.com/fcm/send/${randomBytes(12).toString('hex')}`) {
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    return {
      kind: 'webpush',
      subscription: { endpoint, keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: randomBytes(16).toString('base64url') } },
    };
  }

  it('registers a web-push subscription once and refreshes it after (201, then 200)', async () => {
    const client = await createClient(t);
    const body = webPush();
    const first = await api('POST', '/auth/me/device-token', client.token, body);
    expect(first.statusCode, first.body).toBe(201);
    const device = first.json().data;
    expect(device).toMatchObject({ kind: 'webpush', endpoint: body.subscription.endpoint, token: null, platform: null });
    expect(device.id).toEqual(expect.any(Number));

    const again = await api('POST', '/auth/me/device-token', client.token, { ...webPush(body.subscription.endpoint), platform: 'firefox' });
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json().data).toMatchObject({ id: device.id, created_at: device.created_at, platform: 'firefox' });
    expect(Date.parse(again.json().data.last_seen_at)).toBeGreaterThan(Date.parse(device.last_seen_at));
    const rows = await t.database.db.select().from(deviceTokens).where(eq(deviceTokens.token, body.subscription.endpoint));
    expect(rows).toHaveLength(1);
    expect(rows[0]!.keys).not.toEqual(body.subscription.keys);
  });

  it('moves a target to whoever registers it last', async () => {
    const first = await createClient(t);
    const second = await createPrestataire(t);
    const token = randomBytes(32).toString('hex').toUpperCase();
    const created = await api('POST', '/auth/me/device-token', first.token, { kind: 'apns', token, platform: 'ios' });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().data).toMatchObject({ kind: 'apns', token: token.toLowerCase(), endpoint: null, platform: 'ios' });
    const moved = await api('POST', '/auth/me/device-token', second.token, { kind: 'apns', token: token.toLowerCase() });
    expect(moved.statusCode, moved.body).toBe(200);
    expect(moved.json().data).toMatchObject({ id: created.json().data.id, platform: 'ios' });
    const rows = await t.database.db.select().from(deviceTokens).where(inArray(deviceTokens.userId, [first.user.id, second.user.id]));
    expect(rows.map((r) => [r.userId, r.kind])).toEqual([[second.user.id, 'apns']]);
  });

  it('keeps targets of different kinds apart and registers FCM tokens', async () => {
    const client = await createClient(t);
    const fcm = `${randomBytes(16).toString('base64url')}:APA91b${randomBytes(90).toString('base64url')}`;
    const res = await api('POST', '/auth/me/device-token', client.token, { kind: 'fcm', token: fcm, platform: 'android' });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().data).toMatchObject({ kind: 'fcm', token: fcm, platform: 'android' });
  });

  it('answers 422 with the path of each invalid field', async () => {
    const client = await createClient(t);
    const valid = webPush();
    const cases: [unknown, string][] = [
      [{}, 'kind'],
      [{ kind: 'sms', token: 'x' }, 'kind'],
      [{ kind: 'webpush' }, 'subscription'],
      [{ ...valid, subscription: { ...valid.subscription, endpoint: 'http://push.example/abc' } }, 'subscription.endpoint'],
      [{ ...valid, subscription: { ...valid.subscription, endpoint: 'not a url' } }, 'subscription.endpoint'],
      [{ ...valid, subscription: { ...valid.subscription, keys: { ...valid.subscription.keys, p256dh: randomBytes(64).toString('base64url') } } }, 'subscription.keys.p256dh'],
      [{ ...valid, subscription: { ...valid.subscription, keys: { ...valid.subscription.keys, auth: 'not/base64url+' } } }, 'subscription.keys.auth'],
      [{ ...valid, subscription: { endpoint: valid.subscription.endpoint } }, 'subscription.keys'],
      [{ kind: 'fcm', token: 'short' }, 'token'],
      [{ kind: 'fcm', token: `${'a'.repeat(40)} ${'b'.repeat(40)}` }, 'token'],
      [{ kind: 'apns', token: 'z'.repeat(64) }, 'token'],
      [{ kind: 'apns' }, 'token'],
    ];
    for (const [body, field] of cases) {
      const errors = fieldErrors(await api('POST', '/auth/me/device-token', client.token, body as Json));
      expect(Object.keys(errors), JSON.stringify(body)).toEqual([field]);
    }
  });

  it('answers 401 without a token', async () => {
    expectError(await api('POST', '/auth/me/device-token', undefined, webPush()), 401, 'unauthenticated');
  });
});

describe('DELETE /auth/me', () => {
  it('anonymises the account: its sessions, devices, photo and e-mail go, the row stays', async () => {
    const client = await createClient(t, { phone: '+33600000000' });
    const photo = await uploadPhoto(client.token, [{ name: 'photo', filename: 'me.png', data: PNG_1X1 }]);
    const photoUrl = photo.json().data.photo_url as string;
    await api('POST', '/auth/me/device-token', client.token, { kind: 'apns', token: randomBytes(32).toString('hex') });
    const other = (await login(client.email, client.password)).json().data.token as string;

    const res = await api('DELETE', '/auth/me', client.token, { password: client.password });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().message).toEqual(expect.any(String));

    expectError(await me(client.token), 401, 'unauthenticated');
    expectError(await me(other), 401, 'unauthenticated');
    expectError(await login(client.email, client.password), 401, 'unauthenticated');
    expectError(await t.app.inject({ method: 'GET', url: photoUrl }), 404, 'not_found');
    const row = await userRow(client.user.id);
    expect(row).toMatchObject({ email: `deleted-${client.user.id}@deleted.invalid`, phone: null, photoKey: null, passwordHash: null });
    expect(row.deletedAt).toBeInstanceOf(Date);
    expect(await t.database.db.select().from(deviceTokens).where(eq(deviceTokens.userId, client.user.id))).toEqual([]);
    expect(await activity(client.user.id, 'user.deleted')).toHaveLength(1);
    // The address is free for a new account.
    const again = await api('POST', '/auth/register/client', undefined, {
      first_name: 'New',
      last_name: 'Owner',
      email: client.email,
      password: 'another-secret',
      password_confirmation: 'another-secret',
    });
    expect(again.statusCode, again.body).toBe(201);
  });

  it('answers 422 on a wrong or missing password, and deletes nothing', async () => {
    const client = await createClient(t);
    expect(Object.keys(fieldErrors(await api('DELETE', '/auth/me', client.token, { password: 'not-the-password' })))).toEqual(['password']);
    expect(Object.keys(fieldErrors(await api('DELETE', '/auth/me', client.token, {})))).toEqual(['password']);
    expect(Object.keys(fieldErrors(await api('DELETE', '/auth/me', client.token)))).toEqual(['password']);
    expect((await me(client.token)).statusCode).toBe(200);
    expect((await userRow(client.user.id)).deletedAt).toBeNull();
  });

  it('lets an account without a password delete itself within 15 minutes of signing in, and only then', async () => {
    const stale = await createClient(t, { password: null });
    await ageSession(stale.token, 20);
    expectError(await api('DELETE', '/auth/me', stale.token), 403, 'forbidden');
    expect((await userRow(stale.user.id)).deletedAt).toBeNull();

    const recent = await createClient(t, { password: null });
    const res = await api('DELETE', '/auth/me', recent.token);
    expect(res.statusCode, res.body).toBe(200);
    expect((await userRow(recent.user.id)).deletedAt).toBeInstanceOf(Date);
  });

  it('deletes a prestataire and keeps its business profile row for history', async () => {
    const prestataire = await createPrestataire(t);
    expect((await api('DELETE', '/auth/me', prestataire.token, { password: prestataire.password })).statusCode).toBe(200);
    expect((await userRow(prestataire.user.id)).deletedAt).toBeInstanceOf(Date);
  });

  it('refuses the last active administrator with 409', async () => {
    // This is the only test of the file that makes administrators.
    const first = await createAdmin(t);
    const activeAdmins = async () =>
      (await t.database.db.select().from(users).where(and(eq(users.role, 'admin'), eq(users.status, 'active')))).filter((u) => !u.deletedAt);
    expect(await activeAdmins()).toHaveLength(1);
    expectError(await api('DELETE', '/auth/me', first.token, { password: first.password }), 409, 'conflict');

    // A suspended administrator does not count.
    const suspended = await createAdmin(t);
    await t.database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, suspended.user.id));
    expectError(await api('DELETE', '/auth/me', first.token, { password: first.password }), 409, 'conflict');

    const second = await createAdmin(t);
    expect((await api('DELETE', '/auth/me', first.token, { password: first.password })).statusCode).toBe(200);
    expectError(await api('DELETE', '/auth/me', second.token, { password: second.password }), 409, 'conflict');
    expect((await activeAdmins()).map((u) => u.id)).toEqual([second.user.id]);
  });

  it('answers 401 without a token', async () => {
    expectError(await api('DELETE', '/auth/me', undefined, { password: 'x' }), 401, 'unauthenticated');
  });
});
