import { verifyPassword } from '@repo/auth';
import { and, eq, isNull } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, sessions, userTokens, users } from '../src/db/schema/index.js';
import { systemActor } from '../src/lib/context.js';
import { bearer, buildTestApp, createClient, createPrestataire, expectError, tokenFor, unique, type TestApp, type TestUser, usersService } from './helpers.js';
import { codeIn, lastMailTo, linkTokenIn, startSmtpSink, type ReceivedMail } from './mail-sink.js';

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

const NEW_PASSWORD = 'a brand new passphrase';
const newPassword = { password: NEW_PASSWORD, password_confirmation: NEW_PASSWORD };
const SENT_LINK = { message: 'If an account exists for this address, a password reset link has been sent' };
const SENT_CODE = { message: 'If an account exists for this address, a password reset code has been sent' };
const DONE = { message: 'Your password has been reset; sign in with the new one' };

function post(url: string, payload: unknown) {
  return t.app.inject({ method: 'POST', url: `/api/v1${url}`, payload: payload as object });
}

const account = (lang: 'fr' | 'en' = 'fr') => createClient(t, { lang, email: `reset${unique()}-${Date.now()}@example.test` });

async function mailTo(address: string): Promise<ReceivedMail[]> {
  await t.app.mailer.idle();
  return sink.to(address);
}




async function sendLink(address: string) {
  const res = await post('/auth/forgot-password', { email: address });
  expect(res.statusCode, res.body).toBe(200);
  return linkTokenIn(await lastMailTo(t.app, sink, address), '/reset-password');
}

async function sendCode(address: string) {
  const res = await post('/auth/send-password-reset-otp', { email: address });
  expect(res.statusCode, res.body).toBe(200);
  return codeIn(await lastMailTo(t.app, sink, address));
}

async function grantFor(address: string) {
  const otp = await sendCode(address);
  const res = await post('/auth/verify-password-reset-otp', { email: address, otp });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data.reset_token as string;
}

async function passwordHashOf(userId: number) {
  const [row] = await t.database.db.select({ hash: users.passwordHash }).from(users).where(eq(users.id, userId));
  return row!.hash;
}

async function hasPassword(userId: number, password: string) {
  const hash = await passwordHashOf(userId);
  return hash !== null && (await verifyPassword(hash, password));
}

async function liveSessions(userId: number) {
  return t.database.db.select().from(sessions).where(and(eq(sessions.userId, userId), isNull(sessions.revokedAt)));
}

async function resetEntries(userId: number) {
  return t.database.db
    .select()
    .from(activityLog)
    .where(and(eq(activityLog.action, 'user.password_reset'), eq(activityLog.subjectId, userId)));
}

async function expire(userId: number, purpose: 'password_reset_link' | 'password_reset_otp' | 'password_reset_grant') {
  await t.database.db
    .update(userTokens)
    .set({ expiresAt: new Date(Date.now() - 1000) })
    .where(and(eq(userTokens.userId, userId), eq(userTokens.purpose, purpose)));
}

const wrong = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

/** What a completed reset leaves behind: the new password, no session, a log entry, a notice. */
async function expectReset(who: TestUser, method: 'link' | 'otp', notice: string) {
  expect(await hasPassword(who.user.id, NEW_PASSWORD)).toBe(true);
  expect(await liveSessions(who.user.id)).toHaveLength(0);
  expectError(await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: bearer(who.token) }), 401, 'unauthenticated');
  const entries = await resetEntries(who.user.id);
  expect(entries).toHaveLength(1);
  expect(entries[0]).toMatchObject({ subjectType: 'user', after: { method } });
  expect((await lastMailTo(t.app, sink, who.email)).subject).toBe(notice);
  const login = await post('/auth/login', { email: who.email, password: NEW_PASSWORD });
  expect(login.statusCode, login.body).toBe(200);
  expectError(await post('/auth/login', { email: who.email, password: who.password }), 401, 'unauthenticated');
}

describe('password reset by link', () => {
  it('e-mails a French link valid 60 minutes; the reset sets the password, signs every device out and says so', async () => {
    const who = await account('fr');
    const second = await tokenFor(t, who.user.id);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: bearer(second) })).statusCode).toBe(200);

    const res = await post('/auth/forgot-password', { email: ` ${who.email.toUpperCase()}` });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(SENT_LINK);
    const mail = await lastMailTo(t.app, sink, who.email);
    expect(mail.subject).toBe('Réinitialisez votre mot de passe');
    expect(mail.text).toContain('Bonjour Camille');
    expect(mail.text).toContain('60 minutes');
    const token = linkTokenIn(mail, '/reset-password');
    const [stored] = await t.database.db
      .select()
      .from(userTokens)
      .where(and(eq(userTokens.userId, who.user.id), eq(userTokens.purpose, 'password_reset_link')));
    expect(stored!.tokenHash).not.toContain(token);
    expect((stored!.expiresAt.getTime() - stored!.createdAt.getTime()) / 60_000).toBeCloseTo(60, 0);

    const reset = await post('/auth/reset-password', { token, ...newPassword });
    expect(reset.statusCode, reset.body).toBe(200);
    expect(reset.json()).toEqual(DONE);
    await expectReset(who, 'link', 'Votre mot de passe a été réinitialisé');
    expectError(await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: bearer(second) }), 401, 'unauthenticated');

    const again = expectError(await post('/auth/reset-password', { token, password: 'yet another passphrase', password_confirmation: 'yet another passphrase' }), 422, 'validation_error');
    expect(again.errors).toEqual({ token: ['This link is invalid or has expired'] });
    expect(await hasPassword(who.user.id, NEW_PASSWORD)).toBe(true);
  });

  it('writes to an English speaker in English', async () => {
    const who = await account('en');
    const token = await sendLink(who.email);
    const mail = (await mailTo(who.email)).at(-1)!;
    expect(mail.subject).toBe('Reset your password');
    expect(mail.text).toContain('Choose a new password: https://app.example/reset-password?token=');
    expect((await post('/auth/reset-password', { token, ...newPassword })).statusCode).toBe(200);
    await expectReset(who, 'link', 'Your password was reset');
    expect((await lastMailTo(t.app, sink, who.email)).text).toContain('every device has been signed out');
  });

  it('a new link replaces the previous one', async () => {
    const who = await account();
    const first = await sendLink(who.email);
    const second = await sendLink(who.email);
    expectError(await post('/auth/reset-password', { token: first, ...newPassword }), 422, 'validation_error');
    expect((await post('/auth/reset-password', { token: second, ...newPassword })).statusCode).toBe(200);
  });

  it('refuses an expired link and leaves the password and sessions alone', async () => {
    const who = await account();
    const token = await sendLink(who.email);
    await expire(who.user.id, 'password_reset_link');
    expectError(await post('/auth/reset-password', { token, ...newPassword }), 422, 'validation_error');
    expect(await hasPassword(who.user.id, who.password)).toBe(true);
    expect(await liveSessions(who.user.id)).toHaveLength(1);
  });

  it('refuses a link once the account is suspended', async () => {
    const who = await account();
    const token = await sendLink(who.email);
    await t.database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, who.user.id));
    expectError(await post('/auth/reset-password', { token, ...newPassword }), 422, 'validation_error');
    expect(await hasPassword(who.user.id, who.password)).toBe(true);
  });

  it('of two simultaneous resets with one link exactly one succeeds', async () => {
    const who = await account();
    const token = await sendLink(who.email);
    const results = await Promise.all([
      post('/auth/reset-password', { token, ...newPassword }),
      post('/auth/reset-password', { token, password: 'the other passphrase', password_confirmation: 'the other passphrase' }),
    ]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 422]);
    expect(await resetEntries(who.user.id)).toHaveLength(1);
  });

  it('lets an account made by social sign-in set its first password', async () => {
    const who = await createClient(t, { password: null, googleSubject: `google-${unique()}` });
    expect(await passwordHashOf(who.user.id)).toBeNull();
    const token = await sendLink(who.email);
    expect((await post('/auth/reset-password', { token, ...newPassword })).statusCode).toBe(200);
    expect(await hasPassword(who.user.id, NEW_PASSWORD)).toBe(true);
  });

  it('works for a prestataire', async () => {
    const who = await createPrestataire(t, { lang: 'en' });
    const token = await sendLink(who.email);
    expect((await post('/auth/reset-password', { token, ...newPassword })).statusCode).toBe(200);
    expect(await hasPassword(who.user.id, NEW_PASSWORD)).toBe(true);
  });
});

describe('password reset by code', () => {
  it('e-mails a 6-digit French code; verifying it grants a 15-minute single-use reset token', async () => {
    const who = await account('fr');
    const res = await post('/auth/send-password-reset-otp', { email: who.email });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(SENT_CODE);
    const mail = await lastMailTo(t.app, sink, who.email);
    expect(mail.subject).toBe('Votre code de réinitialisation du mot de passe');
    const otp = codeIn(mail);
    expect(mail.text).toContain(`Votre code de réinitialisation : ${otp}`);

    const verified = await post('/auth/verify-password-reset-otp', { email: who.email, otp });
    expect(verified.statusCode, verified.body).toBe(200);
    const { data } = verified.json();
    expect(data.expires_in).toBe(900);
    expect(data.reset_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // Verifying used the code up.
    expectError(await post('/auth/verify-password-reset-otp', { email: who.email, otp }), 422, 'validation_error');
    expect(await hasPassword(who.user.id, who.password)).toBe(true);

    const reset = await post('/auth/reset-password-otp', { reset_token: data.reset_token, ...newPassword });
    expect(reset.statusCode, reset.body).toBe(200);
    expect(reset.json()).toEqual(DONE);
    await expectReset(who, 'otp', 'Votre mot de passe a été réinitialisé');

    const again = expectError(await post('/auth/reset-password-otp', { reset_token: data.reset_token, ...newPassword }), 422, 'validation_error');
    expect(again.errors).toEqual({ reset_token: ['The reset token is invalid or has expired'] });
  });

  it('resets with the e-mail and code directly, in English', async () => {
    const who = await account('en');
    const otp = await sendCode(who.email);
    const mail = await lastMailTo(t.app, sink, who.email);
    expect(mail.subject).toBe('Your password reset code');
    expect(mail.text).toContain(`Your reset code: ${otp}`);
    const reset = await post('/auth/reset-password-otp', { email: who.email, otp, ...newPassword });
    expect(reset.statusCode, reset.body).toBe(200);
    await expectReset(who, 'otp', 'Your password was reset');
    const again = expectError(await post('/auth/reset-password-otp', { email: who.email, otp, ...newPassword }), 422, 'validation_error');
    expect(again.errors).toEqual({ otp: ['The code is invalid or has expired'] });
  });

  it('prefers the reset token when a code is sent along', async () => {
    const who = await account();
    const grant = await grantFor(who.email);
    const res = await post('/auth/reset-password-otp', { reset_token: grant, email: who.email, otp: '000000', ...newPassword });
    expect(res.statusCode, res.body).toBe(200);
    expect(await hasPassword(who.user.id, NEW_PASSWORD)).toBe(true);
  });

  it('a new code replaces the old one', async () => {
    const who = await account();
    const old = await sendCode(who.email);
    let fresh = await sendCode(who.email);
    while (fresh === old) fresh = await sendCode(who.email);
    expectError(await post('/auth/verify-password-reset-otp', { email: who.email, otp: old }), 422, 'validation_error');
    expect((await post('/auth/verify-password-reset-otp', { email: who.email, otp: fresh })).statusCode).toBe(200);
  });

  it('refuses an expired code and an expired reset token', async () => {
    const who = await account();
    const otp = await sendCode(who.email);
    await expire(who.user.id, 'password_reset_otp');
    expectError(await post('/auth/verify-password-reset-otp', { email: who.email, otp }), 422, 'validation_error');
    expectError(await post('/auth/reset-password-otp', { email: who.email, otp, ...newPassword }), 422, 'validation_error');

    const grant = await grantFor(who.email);
    await expire(who.user.id, 'password_reset_grant');
    const error = expectError(await post('/auth/reset-password-otp', { reset_token: grant, ...newPassword }), 422, 'validation_error');
    expect(error.errors).toEqual({ reset_token: ['The reset token is invalid or has expired'] });
    expect(await hasPassword(who.user.id, who.password)).toBe(true);
  });

  it('five wrong attempts, on either route, kill the code until a new one is sent', async () => {
    const who = await account();
    const otp = await sendCode(who.email);
    for (let i = 0; i < 3; i++) {
      const error = expectError(await post('/auth/verify-password-reset-otp', { email: who.email, otp: wrong(otp) }), 422, 'validation_error');
      expect(error.errors).toEqual({ otp: ['The code is invalid or has expired'] });
    }
    for (let i = 0; i < 2; i++) {
      expectError(await post('/auth/reset-password-otp', { email: who.email, otp: wrong(otp), ...newPassword }), 422, 'validation_error');
    }
    expectError(await post('/auth/verify-password-reset-otp', { email: who.email, otp }), 422, 'validation_error');
    expectError(await post('/auth/reset-password-otp', { email: who.email, otp, ...newPassword }), 422, 'validation_error');
    expect(await hasPassword(who.user.id, who.password)).toBe(true);

    const fresh = await sendCode(who.email);
    expect((await post('/auth/reset-password-otp', { email: who.email, otp: fresh, ...newPassword })).statusCode).toBe(200);
  });

  it('of two simultaneous uses of one code, or of one reset token, exactly one succeeds', async () => {
    const who = await account();
    const otp = await sendCode(who.email);
    const verifications = await Promise.all([
      post('/auth/verify-password-reset-otp', { email: who.email, otp }),
      post('/auth/verify-password-reset-otp', { email: who.email, otp }),
    ]);
    expect(verifications.map((r) => r.statusCode).sort()).toEqual([200, 422]);

    const grant = verifications.find((r) => r.statusCode === 200)!.json().data.reset_token as string;
    const resets = await Promise.all([
      post('/auth/reset-password-otp', { reset_token: grant, ...newPassword }),
      post('/auth/reset-password-otp', { reset_token: grant, ...newPassword }),
    ]);
    expect(resets.map((r) => r.statusCode).sort()).toEqual([200, 422]);
    expect(await resetEntries(who.user.id)).toHaveLength(1);
  });

  it('a code is only good for its own account', async () => {
    const a = await account();
    const b = await account();
    const otp = await sendCode(a.email);
    expectError(await post('/auth/reset-password-otp', { email: b.email, otp, ...newPassword }), 422, 'validation_error');
    expect(await hasPassword(b.user.id, b.password)).toBe(true);
  });
});

describe('a reset ends the other ways in', () => {
  it('a reset by link kills the live code and reset token', async () => {
    const who = await account();
    const grant = await grantFor(who.email);
    const otp = await sendCode(who.email);
    const token = await sendLink(who.email);
    expect((await post('/auth/reset-password', { token, ...newPassword })).statusCode).toBe(200);
    expectError(await post('/auth/reset-password-otp', { reset_token: grant, ...newPassword }), 422, 'validation_error');
    expectError(await post('/auth/reset-password-otp', { email: who.email, otp, ...newPassword }), 422, 'validation_error');
    const left = await t.database.db.select().from(userTokens).where(eq(userTokens.userId, who.user.id));
    expect(left.filter((row) => row.purpose.startsWith('password_reset'))).toEqual([]);
  });

  it('a reset by code kills the live link', async () => {
    const who = await account();
    const token = await sendLink(who.email);
    const otp = await sendCode(who.email);
    expect((await post('/auth/reset-password-otp', { email: who.email, otp, ...newPassword })).statusCode).toBe(200);
    expectError(await post('/auth/reset-password', { token, password: 'something else again', password_confirmation: 'something else again' }), 422, 'validation_error');
    expect(await hasPassword(who.user.id, NEW_PASSWORD)).toBe(true);
  });
});

describe('sending never tells who has an account', () => {
  it('answers unknown, suspended, banned and deleted addresses exactly as a live one, and e-mails none of them', async () => {
    const live = await account();
    const suspended = await account();
    await t.database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, suspended.user.id));
    const banned = await account();
    await t.database.db.update(users).set({ status: 'banned' }).where(eq(users.id, banned.user.id));
    const deleted = await account();
    const anonymised = await usersService(t).anonymise(systemActor, deleted.user.id);
    const unknown = `nobody${unique()}@example.test`;
    const silent = [unknown, suspended.email, banned.email, deleted.email, anonymised.email];

    for (const [route, expected] of [
      ['/auth/forgot-password', SENT_LINK],
      ['/auth/send-password-reset-otp', SENT_CODE],
    ] as const) {
      const reference = await post(route, { email: live.email });
      expect(reference.statusCode).toBe(200);
      expect(reference.json()).toEqual(expected);
      for (const address of silent) {
        const res = await post(route, { email: address });
        expect(res.statusCode).toBe(200);
        expect(res.body).toBe(reference.body);
      }
    }
    await t.app.mailer.idle();
    expect(sink.to(live.email)).toHaveLength(2);
    for (const address of silent) expect(sink.to(address)).toHaveLength(0);
  });

  it('a code checked against an unknown address fails like a wrong code', async () => {
    const who = await account();
    const otp = await sendCode(who.email);
    const unknown = expectError(await post('/auth/verify-password-reset-otp', { email: `ghost${unique()}@example.test`, otp }), 422, 'validation_error');
    const wrongCode = expectError(await post('/auth/verify-password-reset-otp', { email: who.email, otp: wrong(otp) }), 422, 'validation_error');
    expect(unknown).toEqual(wrongCode);
  });

  it('limits sends to 5 an hour per address and purpose, with Retry-After, for unknown addresses too', async () => {
    const who = await account();
    const unknown = `throttled${unique()}@example.test`;
    for (const route of ['/auth/forgot-password', '/auth/send-password-reset-otp']) {
      for (const address of [who.email, unknown]) {
        for (let i = 0; i < 5; i++) expect((await post(route, { email: address })).statusCode).toBe(200);
        const limited = expectError(await post(route, { email: address.toUpperCase() }), 429, 'rate_limited');
        expect(limited.message).toBe('Too many e-mails were requested for this address; retry later');
        const retryAfter = Number((await post(route, { email: address })).headers['retry-after']);
        expect(retryAfter).toBeGreaterThan(3000);
        expect(retryAfter).toBeLessThanOrEqual(3600);
      }
    }
    await t.app.mailer.idle();
    expect(sink.to(who.email)).toHaveLength(10);
    expect(sink.to(unknown)).toHaveLength(0);
  });
});

describe('validation', () => {
  it('answers 422 with the failing fields', async () => {
    const cases: [string, unknown, Record<string, unknown>][] = [
      ['/auth/forgot-password', {}, { email: expect.any(Array) }],
      ['/auth/forgot-password', { email: 'nope' }, { email: ['Must be a valid e-mail address'] }],
      ['/auth/send-password-reset-otp', { email: '' }, { email: expect.any(Array) }],
      ['/auth/reset-password', {}, { token: expect.any(Array), password: expect.any(Array), password_confirmation: expect.any(Array) }],
      ['/auth/reset-password', { token: 'abc', password: 'short', password_confirmation: 'short' }, { password: ['Must be at least 8 characters'] }],
      [
        '/auth/reset-password',
        { token: 'abc', password: NEW_PASSWORD, password_confirmation: 'something else' },
        { password_confirmation: ['Password confirmation does not match'] },
      ],
      ['/auth/verify-password-reset-otp', { email: 'a@example.test', otp: '1234567' }, { otp: ['Must be a code of 6 digits'] }],
      ['/auth/verify-password-reset-otp', { otp: '123456' }, { email: expect.any(Array) }],
      ['/auth/reset-password-otp', { ...newPassword }, { email: ['Required unless a reset_token is given'], otp: ['Required unless a reset_token is given'] }],
      ['/auth/reset-password-otp', { email: 'a@example.test', ...newPassword }, { otp: ['Required unless a reset_token is given'] }],
      ['/auth/reset-password-otp', { email: 'a@example.test', otp: 'abcdef', ...newPassword }, { otp: ['Must be a code of 6 digits'] }],
      [
        '/auth/reset-password-otp',
        { reset_token: 'abc', password: NEW_PASSWORD, password_confirmation: 'x' },
        { password_confirmation: ['Password confirmation does not match'] },
      ],
      ['/auth/reset-password-otp', { reset_token: 'abc' }, { password: expect.any(Array), password_confirmation: expect.any(Array) }],
    ];
    for (const [url, payload, errors] of cases) {
      const error = expectError(await post(url, payload), 422, 'validation_error');
      expect(error.errors, `${url} ${JSON.stringify(payload)}`).toEqual(errors);
    }
  });

  it('a bad new password does not spend the code', async () => {
    const who = await account();
    const otp = await sendCode(who.email);
    expectError(await post('/auth/reset-password-otp', { email: who.email, otp, password: 'short', password_confirmation: 'short' }), 422, 'validation_error');
    expect((await post('/auth/reset-password-otp', { email: who.email, otp, ...newPassword })).statusCode).toBe(200);
  });
});
