import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, sessions, users, userTokens } from '../src/db/schema/index.js';
import { bearer, buildTestApp, createClient, expectError, unique, type TestApp } from './helpers.js';
import { startSmtpSink } from './mail-sink.js';

let sink: Awaited<ReturnType<typeof startSmtpSink>>;
let t: TestApp;

beforeAll(async () => {
  sink = await startSmtpSink();
  t = await buildTestApp({ SMTP_URL: sink.url, APP_URL: 'https://app.example', RATE_LIMIT_PUBLIC: '100000', RATE_LIMIT_AUTHENTICATED: '100000' });
});
afterAll(async () => {
  await t.close();
  await sink.close();
});

type Json = Record<string, unknown>;
const api = (method: 'GET' | 'PUT' | 'POST', url: string, token?: string, payload?: Json) =>
  t.app.inject({ method, url: `/api/v1${url}`, headers: token ? bearer(token) : {}, ...(payload === undefined ? {} : { payload }) });
const updateMe = (token: string, body: Json) => api('PUT', '/auth/me', token, body);
const login = (email: string, password: string) => api('POST', '/auth/login', undefined, { email, password });
const newAddress = () => `moved${unique()}-${Date.now()}@example.test`;

/** The token of the newest link of this kind e-mailed to an address. */
async function linkTo(address: string, path: 'verify-email' | 'revert-email-change' | 'reset-password') {
  await t.app.mailer.idle();
  const pattern = new RegExp(`https://app\\.example/${path}\\?token=([A-Za-z0-9_%-]+)`);
  const mail = sink.to(address).findLast((m) => pattern.test(m.text));
  if (!mail) throw new Error(`no ${path} link reached ${address}`);
  return { token: decodeURIComponent(pattern.exec(mail.text)![1]!), mail };
}

async function userRow(id: number) {
  const [row] = await t.database.db.select().from(users).where(eq(users.id, id));
  return row!;
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

async function actions(userId: number) {
  const rows = await t.database.db.select().from(activityLog).where(eq(activityLog.subjectId, userId)).orderBy(activityLog.id);
  return rows.map((r) => r.action);
}

describe('asking for a new e-mail', () => {
  it('needs the current password: the bearer token alone changes nothing', async () => {
    const client = await createClient(t);
    const next = newAddress();
    const missing = expectError(await updateMe(client.token, { email: next }), 422, 'validation_error');
    expect(Object.keys(missing.errors ?? {})).toEqual(['current_password']);
    const wrong = expectError(await updateMe(client.token, { email: next, current_password: 'not-the-password' }), 422, 'validation_error');
    expect(wrong.errors?.current_password).toEqual(['The password is incorrect']);
    expect(await userRow(client.user.id)).toMatchObject({ email: client.email, pendingEmail: null });
    await t.app.mailer.idle();
    expect(sink.to(next)).toEqual([]);
  });

  it('keeps the e-mail until the new address confirms, shows it as pending, and applies the other fields at once', async () => {
    const client = await createClient(t);
    const next = newAddress();
    const res = await updateMe(client.token, { email: next.toUpperCase(), first_name: 'Camille-Anne', current_password: client.password });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ email: client.email, pending_email: next, email_verified: true, first_name: 'Camille-Anne' });
    expect(res.json().message).toMatch(/confirm the new e-mail address/);
    expect((await api('GET', '/auth/me', client.token)).json().data).toMatchObject({ email: client.email, pending_email: next });

    // The new address gets the confirmation link; the current one is told, with an undo link.
    const confirm = await linkTo(next, 'verify-email');
    expect(confirm.mail.subject).toBe('Confirmez votre nouvelle adresse e-mail');
    const undo = await linkTo(client.email, 'revert-email-change');
    expect(undo.mail.subject).toBe('Changement de l’adresse e-mail de votre compte');
    expect(undo.mail.text).toContain(next);

    // Until then the account signs in with its current address only.
    expect((await login(client.email, client.password)).statusCode).toBe(200);
    expectError(await login(next, client.password), 401, 'unauthenticated');
    // Only hashes are stored.
    const stored = await t.database.db.select().from(userTokens).where(eq(userTokens.userId, client.user.id));
    expect(stored.map((r) => r.tokenHash)).not.toContain(confirm.token);
    expect(stored.map((r) => r.tokenHash)).not.toContain(undo.token);
    expect((await actions(client.user.id)).slice(-2)).toEqual(['user.profile_updated', 'user.email_change_requested']);
  });

  it('takes effect when the link sent to the new address is followed, once', async () => {
    const client = await createClient(t);
    const next = newAddress();
    expect((await updateMe(client.token, { email: next, current_password: client.password })).statusCode).toBe(200);
    const { token } = await linkTo(next, 'verify-email');
    // HEAD checks the link without spending it.
    expect((await t.app.inject({ method: 'HEAD', url: `/api/v1/auth/verify-email?token=${encodeURIComponent(token)}` })).statusCode).toBe(200);
    const confirmed = await api('POST', '/auth/confirm-email', undefined, { token });
    expect(confirmed.statusCode, confirmed.body).toBe(200);
    expect(confirmed.json().data).toMatchObject({ email: next, email_verified: true });
    expect(await userRow(client.user.id)).toMatchObject({ email: next, pendingEmail: null });
    expect((await api('GET', '/auth/me', client.token)).json().data).toMatchObject({ email: next, pending_email: null });

    expect((await login(next, client.password)).statusCode).toBe(200);
    expectError(await login(client.email, client.password), 401, 'unauthenticated');
    expectError(await api('POST', '/auth/confirm-email', undefined, { token }), 422, 'validation_error');
    const [entry] = await t.database.db
      .select()
      .from(activityLog)
      .where(and(eq(activityLog.subjectId, client.user.id), eq(activityLog.action, 'user.email_changed')));
    expect(entry).toMatchObject({ before: { email: client.email }, after: { email: next } });
  });

  it('refuses an expired confirmation link, and one overtaken by a later request', async () => {
    const client = await createClient(t);
    const first = newAddress();
    await updateMe(client.token, { email: first, current_password: client.password });
    const stale = await linkTo(first, 'verify-email');
    const second = newAddress();
    await updateMe(client.token, { email: second, current_password: client.password });
    expectError(await api('POST', '/auth/confirm-email', undefined, { token: stale.token }), 422, 'validation_error');

    const live = await linkTo(second, 'verify-email');
    await t.database.db
      .update(userTokens)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(and(eq(userTokens.userId, client.user.id), eq(userTokens.purpose, 'email_change_confirm')));
    expectError(await api('GET', `/auth/verify-email?token=${encodeURIComponent(live.token)}`), 422, 'validation_error');
    expect(await userRow(client.user.id)).toMatchObject({ email: client.email, pendingEmail: second });
  });

  it('drops a pending change when the current address is sent again', async () => {
    const client = await createClient(t);
    const next = newAddress();
    await updateMe(client.token, { email: next, current_password: client.password });
    const { token } = await linkTo(next, 'verify-email');
    const res = await updateMe(client.token, { email: client.email });
    expect(res.json().data).toMatchObject({ email: client.email, pending_email: null });
    expectError(await api('POST', '/auth/confirm-email', undefined, { token }), 422, 'validation_error');
  });

  it('answers 409 when the new address was taken by another account before it was confirmed', async () => {
    const client = await createClient(t);
    const next = newAddress();
    await updateMe(client.token, { email: next, current_password: client.password });
    const { token } = await linkTo(next, 'verify-email');
    await createClient(t, { email: next });
    expectError(await api('POST', '/auth/confirm-email', undefined, { token }), 409, 'conflict');
    expect((await userRow(client.user.id)).email).toBe(client.email);
  });

  it('asks an account without a password for a sign-in within the last 10 minutes', async () => {
    const social = await createClient(t, { password: null });
    await ageSession(social.token, 11);
    expectError(await updateMe(social.token, { email: newAddress() }), 403, 'forbidden');
    await ageSession(social.token, 2);
    const next = newAddress();
    const res = await updateMe(social.token, { email: next });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ email: social.email, pending_email: next });
  });
});

describe('POST /auth/revert-email-change', () => {
  it('restores the former address after a confirmed change, ends every session and requires a new password', async () => {
    const client = await createClient(t);
    const thief = newAddress();
    await updateMe(client.token, { email: thief, current_password: client.password });
    const undo = await linkTo(client.email, 'revert-email-change');
    await api('POST', '/auth/confirm-email', undefined, { token: (await linkTo(thief, 'verify-email')).token });
    // The thief asks for a reset link at the address it now controls.
    expect((await api('POST', '/auth/forgot-password', undefined, { email: thief })).statusCode).toBe(200);
    const thiefReset = await linkTo(thief, 'reset-password');

    const res = await api('POST', '/auth/revert-email-change', undefined, { token: undo.token });
    expect(res.statusCode, res.body).toBe(200);
    expect(await userRow(client.user.id)).toMatchObject({ email: client.email, pendingEmail: null, passwordHash: null });
    expectError(await api('GET', '/auth/me', client.token), 401, 'unauthenticated');
    expectError(await login(client.email, client.password), 401, 'unauthenticated');
    expectError(await login(thief, client.password), 401, 'unauthenticated');
    // The reset link the thief got is dead; the owner gets a fresh one at the restored address.
    expectError(
      await api('POST', '/auth/reset-password', undefined, { token: thiefReset.token, password: 'thief-password!', password_confirmation: 'thief-password!' }),
      422,
      'validation_error',
    );
    const reset = await linkTo(client.email, 'reset-password');
    expect(reset.mail.subject).toBe('Votre adresse e-mail a été rétablie');
    const chosen = await api('POST', '/auth/reset-password', undefined, { token: reset.token, password: 'owner-new-secret', password_confirmation: 'owner-new-secret' });
    expect(chosen.statusCode, chosen.body).toBe(200);
    expect((await login(client.email, 'owner-new-secret')).statusCode).toBe(200);
    // Single use.
    expectError(await api('POST', '/auth/revert-email-change', undefined, { token: undo.token }), 422, 'validation_error');
    expect(await actions(client.user.id)).toContain('user.email_change_reverted');
  });

  it('drops a change not yet confirmed, whose link then no longer works', async () => {
    const client = await createClient(t);
    const next = newAddress();
    await updateMe(client.token, { email: next, current_password: client.password });
    const undo = await linkTo(client.email, 'revert-email-change');
    const confirm = await linkTo(next, 'verify-email');
    expect((await api('POST', '/auth/revert-email-change', undefined, { token: undo.token })).statusCode).toBe(200);
    expectError(await api('POST', '/auth/confirm-email', undefined, { token: confirm.token }), 422, 'validation_error');
    expect(await userRow(client.user.id)).toMatchObject({ email: client.email, pendingEmail: null });
  });

  it('keeps the first undo link alive through a second change', async () => {
    const client = await createClient(t);
    const first = newAddress();
    await updateMe(client.token, { email: first, current_password: client.password });
    const undo = await linkTo(client.email, 'revert-email-change');
    await api('POST', '/auth/confirm-email', undefined, { token: (await linkTo(first, 'verify-email')).token });
    const second = newAddress();
    await updateMe(client.token, { email: second, current_password: client.password });
    await api('POST', '/auth/confirm-email', undefined, { token: (await linkTo(second, 'verify-email')).token });
    expect((await api('POST', '/auth/revert-email-change', undefined, { token: undo.token })).statusCode).toBe(200);
    expect((await userRow(client.user.id)).email).toBe(client.email);
  });

  it('answers 422 on an unknown or malformed token', async () => {
    expectError(await api('POST', '/auth/revert-email-change', undefined, { token: 'no-such-token' }), 422, 'validation_error');
    const body = expectError(await api('POST', '/auth/revert-email-change', undefined, {}), 422, 'validation_error');
    expect(Object.keys(body.errors ?? {})).toEqual(['token']);
  });
});
