import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, userTokens, users } from '../src/db/schema/index.js';
import { systemActor } from '../src/lib/context.js';
import { buildTestApp, createClient, createPrestataire, expectError, unique, type TestApp, usersService } from './helpers.js';
import { codeIn, lastMailTo, linkTokenIn, startSmtpSink } from './mail-sink.js';

let sink: Awaited<ReturnType<typeof startSmtpSink>>;
let t: TestApp;

beforeAll(async () => {
  sink = await startSmtpSink();
  t = await buildTestApp({ SMTP_URL: sink.url, APP_URL: 'https://app.example', RATE_LIMIT_PUBLIC: '100000' });
});
afterAll(async () => {
  await t.close();
  await sink.close();
});

function post(url: string, payload: unknown) {
  return t.app.inject({ method: 'POST', url: `/api/v1${url}`, payload: payload as object });
}

const unverified = (lang: 'fr' | 'en' = 'fr') =>
  createClient(t, { emailVerified: false, lang, email: `pending${unique()}-${Date.now()}@example.test` });



async function sendLink(address: string) {
  const res = await post('/auth/resend-verification-email', { email: address });
  expect(res.statusCode, res.body).toBe(200);
  return linkTokenIn(await lastMailTo(t.app, sink, address), '/verify-email');
}

async function sendCode(address: string) {
  const res = await post('/auth/send-email-verification-otp', { email: address });
  expect(res.statusCode, res.body).toBe(200);
  return codeIn(await lastMailTo(t.app, sink, address));
}

async function verifiedAt(userId: number) {
  const [row] = await t.database.db.select({ at: users.emailVerifiedAt }).from(users).where(eq(users.id, userId));
  return row!.at;
}

async function verificationEntries(userId: number) {
  return t.database.db
    .select()
    .from(activityLog)
    .where(and(eq(activityLog.action, 'user.email_verified'), eq(activityLog.subjectId, userId)));
}

/** A different code from `code`, so that a "wrong" guess is never right by chance. */
const wrong = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

describe('e-mail verification by link', () => {
  it('e-mails a French link valid 24 hours; GET with its token verifies the address once', async () => {
    const { user, email } = await unverified('fr');
    const res = await post('/auth/resend-verification-email', { email: `  ${email.toUpperCase()} ` });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ message: 'If this address belongs to an account awaiting verification, a new verification link has been sent' });

    const mail = await lastMailTo(t.app, sink, email);
    expect(mail.subject).toBe('Confirmez votre adresse e-mail');
    expect(mail.text).toContain('Bonjour Camille');
    expect(mail.text).toContain('24 heures');
    const token = linkTokenIn(mail, '/verify-email');
    const [stored] = await t.database.db
      .select()
      .from(userTokens)
      .where(and(eq(userTokens.userId, user.id), eq(userTokens.purpose, 'email_verification_link')));
    expect(stored!.tokenHash).not.toContain(token);
    const ttlHours = (stored!.expiresAt.getTime() - stored!.createdAt.getTime()) / 3_600_000;
    expect(ttlHours).toBeCloseTo(24, 1);

    const verified = await t.app.inject({ method: 'GET', url: `/api/v1/auth/verify-email?token=${encodeURIComponent(token)}` });
    expect(verified.statusCode, verified.body).toBe(200);
    const body = verified.json();
    expect(body.message).toBe('E-mail address verified');
    expect(body.data).toMatchObject({ email, email_verified: true });
    expect(new Date(body.data.email_verified_at).getTime()).toBeGreaterThan(Date.now() - 60_000);
    expect(await verifiedAt(user.id)).not.toBeNull();

    const entries = await verificationEntries(user.id);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ subjectType: 'user', actorId: null, after: { email, method: 'link' } });

    const again = await t.app.inject({ method: 'GET', url: `/api/v1/auth/verify-email?token=${encodeURIComponent(token)}` });
    const error = expectError(again, 422, 'validation_error');
    expect(error.errors).toEqual({ token: ['This link is invalid or has expired'] });
  });

  it('e-mails an English link to an English speaker; POST /auth/confirm-email takes the token in the body', async () => {
    const { user, email } = await unverified('en');
    const token = await sendLink(email);
    const mail = await lastMailTo(t.app, sink, email);
    expect(mail.subject).toBe('Confirm your e-mail address');
    expect(mail.text).toContain('Hello Camille');

    const res = await post('/auth/confirm-email', { token });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data.email_verified).toBe(true);
    expect(await verifiedAt(user.id)).not.toBeNull();
    expectError(await post('/auth/confirm-email', { token }), 422, 'validation_error');
  });

  it('the link sent at sign-up verifies the address', async () => {
    const email = `signup${unique()}@example.test`;
    const res = await post('/auth/register/client', {
      first_name: 'Léa',
      last_name: 'Martin',
      email,
      password: 'a long enough password',
      password_confirmation: 'a long enough password',
      lang: 'fr',
    });
    expect(res.statusCode, res.body).toBe(201);
    const token = linkTokenIn(await lastMailTo(t.app, sink, email), '/verify-email');
    const confirmed = await post('/auth/confirm-email', { token });
    expect(confirmed.statusCode, confirmed.body).toBe(200);
    expect(confirmed.json().data.email).toBe(email);
  });

  it('HEAD tells whether a link is valid without using it up', async () => {
    const { email } = await unverified();
    const token = await sendLink(email);
    const url = `/api/v1/auth/verify-email?token=${encodeURIComponent(token)}`;
    const head = await t.app.inject({ method: 'HEAD', url });
    expect(head.statusCode).toBe(200);
    expect(head.body).toBe('');
    expect((await t.app.inject({ method: 'GET', url })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'HEAD', url })).statusCode).toBe(422);
    expect((await t.app.inject({ method: 'HEAD', url: '/api/v1/auth/verify-email?token=nope' })).statusCode).toBe(422);
  });

  it('a new link replaces the previous one', async () => {
    const { user, email } = await unverified();
    const first = await sendLink(email);
    const second = await sendLink(email);
    expect(second).not.toBe(first);
    expectError(await post('/auth/confirm-email', { token: first }), 422, 'validation_error');
    expect((await post('/auth/confirm-email', { token: second })).statusCode).toBe(200);
    expect(await verifiedAt(user.id)).not.toBeNull();
  });

  it('refuses an expired link', async () => {
    const { user, email } = await unverified();
    const token = await sendLink(email);
    await t.database.db
      .update(userTokens)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(and(eq(userTokens.userId, user.id), eq(userTokens.purpose, 'email_verification_link')));
    const error = expectError(await post('/auth/confirm-email', { token }), 422, 'validation_error');
    expect(error.errors).toEqual({ token: ['This link is invalid or has expired'] });
    expect(await verifiedAt(user.id)).toBeNull();
  });

  it('refuses unknown tokens and a link of a suspended account', async () => {
    for (const token of ['not-a-token', 'x'.repeat(43)]) {
      expectError(await post('/auth/confirm-email', { token }), 422, 'validation_error');
    }
    const { user, email } = await unverified();
    const token = await sendLink(email);
    await t.database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, user.id));
    expectError(await post('/auth/confirm-email', { token }), 422, 'validation_error');
    expect(await verifiedAt(user.id)).toBeNull();
  });

  it('of two simultaneous uses of one link exactly one succeeds, and the verification is logged once', async () => {
    const { user, email } = await unverified();
    const token = await sendLink(email);
    const results = await Promise.all([post('/auth/confirm-email', { token }), post('/auth/confirm-email', { token })]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 422]);
    expect(await verificationEntries(user.id)).toHaveLength(1);
  });

  it('a link still valid after verifying by code is a quiet success, logged once', async () => {
    const { user, email } = await unverified();
    const token = await sendLink(email);
    const code = await sendCode(email);
    expect((await post('/auth/verify-email-otp', { email, otp: code })).statusCode).toBe(200);
    const res = await post('/auth/confirm-email', { token });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data.email_verified).toBe(true);
    expect(await verificationEntries(user.id)).toHaveLength(1);
  });
});

describe('e-mail verification by code', () => {
  it('e-mails a 6-digit French code; the code verifies the address once', async () => {
    const { user, email } = await unverified('fr');
    const res = await post('/auth/send-email-verification-otp', { email });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ message: 'If this address belongs to an account awaiting verification, a verification code has been sent' });
    const mail = await lastMailTo(t.app, sink, email);
    expect(mail.subject).toBe('Votre code de vérification');
    expect(mail.text).toContain('10 minutes');
    const code = codeIn(mail);
    expect(code).toMatch(/^\d{6}$/);

    const verified = await post('/auth/verify-email-otp', { email: email.toUpperCase(), otp: ` ${code} ` });
    expect(verified.statusCode, verified.body).toBe(200);
    expect(verified.json()).toMatchObject({ data: { email, email_verified: true }, message: 'E-mail address verified' });
    expect(await verifiedAt(user.id)).not.toBeNull();
    const entries = await verificationEntries(user.id);
    expect(entries).toHaveLength(1);
    expect(entries[0]!.after).toEqual({ email, method: 'otp' });

    const again = expectError(await post('/auth/verify-email-otp', { email, otp: code }), 422, 'validation_error');
    expect(again.errors).toEqual({ otp: ['The code is invalid or has expired'] });
  });

  it('writes to an English speaker in English', async () => {
    const { user, email } = await unverified('en');
    const code = await sendCode(email);
    const mail = await lastMailTo(t.app, sink, email);
    expect(mail.subject).toBe('Your verification code');
    expect(mail.text).toContain(`Your verification code: ${code}`);
    expect((await post('/auth/verify-email-otp', { email, otp: code })).statusCode).toBe(200);
    expect(await verifiedAt(user.id)).not.toBeNull();
  });

  it('a new code replaces the old one', async () => {
    const { email } = await unverified();
    const old = await sendCode(email);
    let fresh = await sendCode(email);
    // Two draws may coincide; ask again until the codes differ.
    while (fresh === old) fresh = await sendCode(email);
    expectError(await post('/auth/verify-email-otp', { email, otp: old }), 422, 'validation_error');
    expect((await post('/auth/verify-email-otp', { email, otp: fresh })).statusCode).toBe(200);
  });

  it('refuses an expired code', async () => {
    const { user, email } = await unverified();
    const code = await sendCode(email);
    await t.database.db
      .update(userTokens)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(and(eq(userTokens.userId, user.id), eq(userTokens.purpose, 'email_verification_otp')));
    expectError(await post('/auth/verify-email-otp', { email, otp: code }), 422, 'validation_error');
    expect(await verifiedAt(user.id)).toBeNull();
  });

  it('five wrong attempts kill the code, even for the right one, until a new code is sent', async () => {
    const { user, email } = await unverified();
    const code = await sendCode(email);
    for (let i = 0; i < 5; i++) {
      const error = expectError(await post('/auth/verify-email-otp', { email, otp: wrong(code) }), 422, 'validation_error');
      expect(error.errors).toEqual({ otp: ['The code is invalid or has expired'] });
    }
    expectError(await post('/auth/verify-email-otp', { email, otp: code }), 422, 'validation_error');
    expect(await verifiedAt(user.id)).toBeNull();

    const fresh = await sendCode(email);
    expect((await post('/auth/verify-email-otp', { email, otp: fresh })).statusCode).toBe(200);
  });

  it('wrong attempts below the limit leave the code usable', async () => {
    const { email } = await unverified();
    const code = await sendCode(email);
    for (let i = 0; i < 4; i++) expectError(await post('/auth/verify-email-otp', { email, otp: wrong(code) }), 422, 'validation_error');
    expect((await post('/auth/verify-email-otp', { email, otp: code })).statusCode).toBe(200);
  });

  it('of two simultaneous uses of one code exactly one succeeds', async () => {
    const { email } = await unverified();
    const otp = await sendCode(email);
    const results = await Promise.all([post('/auth/verify-email-otp', { email, otp }), post('/auth/verify-email-otp', { email, otp })]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 422]);
  });

  it("a code is only good for its own account", async () => {
    const a = await unverified();
    const b = await unverified();
    const code = await sendCode(a.email);
    expectError(await post('/auth/verify-email-otp', { email: b.email, otp: code }), 422, 'validation_error');
    expect(await verifiedAt(b.user.id)).toBeNull();
  });
});

describe('sending never tells who has an account', () => {
  it('answers an unknown, a verified, a suspended and a deleted address exactly as a pending one, and e-mails none of them', async () => {
    const pending = await unverified();
    const verified = await createClient(t);
    const suspended = await unverified();
    await t.database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, suspended.user.id));
    const deleted = await unverified();
    const anonymised = await usersService(t).anonymise(systemActor, deleted.user.id);
    const unknown = `nobody${unique()}@example.test`;

    for (const route of ['/auth/resend-verification-email', '/auth/send-email-verification-otp']) {
      const reference = await post(route, { email: pending.email });
      expect(reference.statusCode).toBe(200);
      for (const address of [unknown, verified.email, suspended.email, deleted.email, anonymised.email]) {
        const res = await post(route, { email: address });
        expect(res.statusCode).toBe(200);
        expect(res.body).toBe(reference.body);
        expect(res.headers['content-type']).toBe(reference.headers['content-type']);
      }
    }
    await t.app.mailer.idle();
    expect(sink.to(pending.email)).toHaveLength(2);
    for (const address of [unknown, verified.email, suspended.email, deleted.email, anonymised.email]) expect(sink.to(address)).toHaveLength(0);
  });

  it('a code checked against an unknown address fails like a wrong code', async () => {
    const { email } = await unverified();
    const code = await sendCode(email);
    const unknown = expectError(await post('/auth/verify-email-otp', { email: `ghost${unique()}@example.test`, otp: code }), 422, 'validation_error');
    const wrongCode = expectError(await post('/auth/verify-email-otp', { email, otp: wrong(code) }), 422, 'validation_error');
    expect(unknown).toEqual(wrongCode);
  });

  it('limits sends to 5 an hour per address and purpose, with Retry-After, for unknown addresses too', async () => {
    const { email } = await unverified();
    const unknown = `throttled${unique()}@example.test`;
    for (const address of [email, unknown]) {
      for (let i = 0; i < 5; i++) expect((await post('/auth/send-email-verification-otp', { email: address })).statusCode).toBe(200);
      // The same address however it is typed.
      const limited = await post('/auth/send-email-verification-otp', { email: ` ${address.toUpperCase()}` });
      expectError(limited, 429, 'rate_limited');
      const retryAfter = Number(limited.headers['retry-after']);
      expect(retryAfter).toBeGreaterThan(3000);
      expect(retryAfter).toBeLessThanOrEqual(3600);
    }
    await t.app.mailer.idle();
    expect(sink.to(email)).toHaveLength(5);
    // The link is another purpose with its own allowance.
    expect((await post('/auth/resend-verification-email', { email })).statusCode).toBe(200);
    // The limit answers the same for the registered and the unknown address.
    const a = await post('/auth/send-email-verification-otp', { email });
    const b = await post('/auth/send-email-verification-otp', { email: unknown });
    expect(a.json().message).toBe(b.json().message);
  });

  it('limits link resends too', async () => {
    const { email } = await createPrestataire(t, { emailVerified: false });
    for (let i = 0; i < 5; i++) expect((await post('/auth/resend-verification-email', { email })).statusCode).toBe(200);
    const limited = expectError(await post('/auth/resend-verification-email', { email }), 429, 'rate_limited');
    expect(limited.message).toMatch(/retry later/);
  });
});

describe('validation', () => {
  it('answers 422 with the failing fields', async () => {
    const cases: [string, unknown, Record<string, unknown>][] = [
      ['/auth/resend-verification-email', {}, { email: expect.any(Array) }],
      ['/auth/resend-verification-email', { email: 'not-an-address' }, { email: ['Must be a valid e-mail address'] }],
      ['/auth/send-email-verification-otp', { email: 42 }, { email: expect.any(Array) }],
      ['/auth/verify-email-otp', { email: 'a@example.test', otp: '12345' }, { otp: ['Must be a code of 6 digits'] }],
      ['/auth/verify-email-otp', { email: 'a@example.test', otp: '12345a' }, { otp: ['Must be a code of 6 digits'] }],
      ['/auth/verify-email-otp', { email: 'a@example.test', otp: 123456 }, { otp: expect.any(Array) }],
      ['/auth/verify-email-otp', {}, { email: expect.any(Array), otp: expect.any(Array) }],
      ['/auth/confirm-email', {}, { token: expect.any(Array) }],
      ['/auth/confirm-email', { token: '   ' }, { token: ['Required'] }],
    ];
    for (const [url, payload, errors] of cases) {
      const error = expectError(await post(url, payload), 422, 'validation_error');
      expect(error.errors, `${url} ${JSON.stringify(payload)}`).toEqual(errors);
    }
    const missing = expectError(await t.app.inject({ method: 'GET', url: '/api/v1/auth/verify-email' }), 422, 'validation_error');
    expect(Object.keys(missing.errors!)).toEqual(['token']);
  });

  it('answers 400 to a body that is not JSON', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/verify-email-otp',
      payload: '{"email":',
      headers: { 'content-type': 'application/json' },
    });
    expectError(res, 400, 'bad_request');
  });
});
