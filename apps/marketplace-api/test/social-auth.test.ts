import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { and, eq } from 'drizzle-orm';
import { exportJWK, generateKeyPair, SignJWT, UnsecuredJWT, type CryptoKey, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, users } from '../src/db/schema/index.js';
import { createJwksIdentityVerifier, InvalidIdentityTokenError } from '../src/integrations/identity/identity.js';
import { bearer, buildTestApp, createClient, createPrestataire, expectError, unique, type TestApp } from './helpers.js';

const GOOGLE_CLIENT = 'web-client.apps.googleusercontent.com';
const GOOGLE_IOS_CLIENT = 'ios-client.apps.googleusercontent.com';
const APPLE_CLIENT = 'com.example.marketplace';
const INVALID_MESSAGE = 'The identity token is invalid or has expired';

interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

async function signingKey(kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } };
}

/** A provider's JWKS endpoint on loopback; `/broken` answers 500 like an outage. */
async function startJwksServer(sets: Record<string, JWK[]>) {
  const server: Server = createServer((req, res) => {
    const keys = sets[req.url ?? ''];
    if (!keys) {
      res.writeHead(500).end('unavailable');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

interface TokenOptions {
  key: SigningKey;
  issuer: string;
  audience: string;
  subject?: string;
  email?: string | null;
  emailVerified?: boolean | string | null;
  nonce?: string;
  expiresAt?: number;
  issuedAt?: number;
  claims?: Record<string, unknown>;
}

async function idToken(opts: TokenOptions): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const payload: Record<string, unknown> = { ...opts.claims };
  if (opts.email !== null) payload.email = opts.email ?? `person${unique()}@gmail.test`;
  if (opts.emailVerified !== null) payload.email_verified = opts.emailVerified ?? true;
  if (opts.nonce !== undefined) payload.nonce = opts.nonce;
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'RS256', kid: opts.key.kid, typ: 'JWT' })
    .setIssuer(opts.issuer)
    .setAudience(opts.audience)
    .setSubject(opts.subject ?? `sub-${unique()}-${Date.now()}`)
    .setIssuedAt(opts.issuedAt ?? now - 10)
    .setExpirationTime(opts.expiresAt ?? now + 3600)
    .sign(opts.key.privateKey);
}

const sha256Hex = (value: string) => createHash('sha256').update(value).digest('hex');

interface AuthBody {
  data: {
    user: { id: number; role: string; email: string; first_name: string; last_name: string; email_verified: boolean; has_password: boolean };
    token: string;
    token_type: string;
  };
}

describe('social sign-in', () => {
  let t: TestApp;
  let jwks: Awaited<ReturnType<typeof startJwksServer>>;
  let googleKey: SigningKey;
  let appleKey: SigningKey;
  let rogueKey: SigningKey;
  let impostorKey: SigningKey;

  const google = (opts: Partial<TokenOptions> = {}) =>
    idToken({ key: googleKey, issuer: 'https://accounts.google.com', audience: GOOGLE_CLIENT, ...opts });
  const apple = (opts: Partial<TokenOptions> = {}) =>
    idToken({ key: appleKey, issuer: 'https://appleid.apple.com', audience: APPLE_CLIENT, ...opts });

  const signIn = (provider: 'google' | 'apple', payload: Record<string, unknown>) =>
    t.app.inject({ method: 'POST', url: `/api/v1/auth/social/${provider}`, payload });

  async function expectRefused(provider: 'google' | 'apple', payload: Record<string, unknown>) {
    const body = expectError(await signIn(provider, payload), 401, 'unauthenticated');
    expect(body.message).toBe(INVALID_MESSAGE);
  }

  const userRow = async (id: number) => (await t.database.db.select().from(users).where(eq(users.id, id)))[0]!;

  beforeAll(async () => {
    [googleKey, appleKey, rogueKey, impostorKey] = await Promise.all([
      signingKey('google-1'),
      signingKey('apple-1'),
      signingKey('rogue-1'),
      // Claims Google's key id without holding Google's key.
      signingKey('google-1'),
    ]);
    jwks = await startJwksServer({ '/google': [googleKey.jwk], '/apple': [appleKey.jwk] });
    t = await buildTestApp({
      GOOGLE_CLIENT_IDS: `${GOOGLE_CLIENT},${GOOGLE_IOS_CLIENT}`,
      GOOGLE_JWKS_URL: jwks.url('/google'),
      APPLE_CLIENT_IDS: APPLE_CLIENT,
      APPLE_JWKS_URL: jwks.url('/apple'),
      // Every test signs in from the same address; the public rate limit is not under test here.
      RATE_LIMIT_PUBLIC: '100000',
    });
  });
  afterAll(async () => {
    await t?.close();
    await jwks?.close();
  });

  describe('Google', () => {
    it('creates a verified client account without a password on the first sign-in', async () => {
      const email = `Lea.Martin${unique()}@Gmail.test`;
      const res = await signIn('google', {
        id_token: await google({ email, subject: 'google-new-1', claims: { given_name: 'Léa', family_name: 'Martin' } }),
      });
      expect(res.statusCode, res.body).toBe(201);
      const { data } = res.json<AuthBody>();
      expect(data.token_type).toBe('Bearer');
      expect(data.user).toMatchObject({
        role: 'client',
        email: email.toLowerCase(),
        first_name: 'Léa',
        last_name: 'Martin',
        email_verified: true,
        has_password: false,
      });
      const row = await userRow(data.user.id);
      expect(row.googleSubject).toBe('google-new-1');
      expect(row.appleSubject).toBeNull();
      expect(row.passwordHash).toBeNull();

      const me = await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: bearer(data.token) });
      expect(me.statusCode, me.body).toBe(200);
    });

    it('finds the same account on the next sign-in, by subject even when the e-mail changed', async () => {
      const first = await signIn('google', { id_token: await google({ subject: 'google-returning' }) });
      expect(first.statusCode).toBe(201);
      const again = await signIn('google', { id_token: await google({ subject: 'google-returning', email: `renamed${unique()}@gmail.test` }) });
      expect(again.statusCode, again.body).toBe(200);
      expect(again.json<AuthBody>().data.user.id).toBe(first.json<AuthBody>().data.user.id);
      expect(again.json<AuthBody>().data.token).not.toBe(first.json<AuthBody>().data.token);
    });

    it('ends two simultaneous first sign-ins of one person with one account', async () => {
      const email = `race${unique()}@gmail.test`;
      const [a, b] = await Promise.all([
        signIn('google', { id_token: await google({ email, subject: 'google-race' }) }),
        signIn('google', { id_token: await google({ email, subject: 'google-race' }) }),
      ]);
      expect([a.statusCode, b.statusCode].sort()).toEqual([200, 201]);
      expect(a.json<AuthBody>().data.user.id).toBe(b.json<AuthBody>().data.user.id);
      expect(await t.database.db.select().from(users).where(eq(users.email, email))).toHaveLength(1);
    });

    it('links the identity to an existing password account of the same verified e-mail', async () => {
      const existing = await createClient(t);
      const res = await signIn('google', { id_token: await google({ email: existing.email.toUpperCase(), subject: 'google-link-1' }) });
      expect(res.statusCode, res.body).toBe(200);
      const { data } = res.json<AuthBody>();
      expect(data.user).toMatchObject({ id: existing.user.id, has_password: true, email_verified: true });
      expect((await userRow(existing.user.id)).googleSubject).toBe('google-link-1');

      const [entry] = await t.database.db
        .select()
        .from(activityLog)
        .where(and(eq(activityLog.action, 'user.social_linked'), eq(activityLog.subjectId, existing.user.id)));
      expect(entry?.after).toMatchObject({ provider: 'google', email_verified: true });

      // The password still works beside the provider.
      const login = await t.app.inject({
        method: 'POST',
        url: '/api/v1/auth/login',
        payload: { email: existing.email, password: existing.password },
      });
      expect(login.statusCode, login.body).toBe(200);
    });

    it('marks an unverified account verified and drops the password nobody proved to own', async () => {
      const squatted = await createClient(t, { emailVerified: false });
      const res = await signIn('google', { id_token: await google({ email: squatted.email, subject: 'google-link-2' }) });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json<AuthBody>().data.user).toMatchObject({ id: squatted.user.id, email_verified: true, has_password: false });
      const row = await userRow(squatted.user.id);
      expect(row.emailVerifiedAt).not.toBeNull();
      expect(row.passwordHash).toBeNull();
      // Sessions opened with the old password end.
      const me = await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: bearer(squatted.token) });
      expectError(me, 401, 'unauthenticated');
    });

    it('signs a prestataire in and answers its business profile', async () => {
      const prestataire = await createPrestataire(t);
      const res = await signIn('google', { id_token: await google({ email: prestataire.email }) });
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json<{ data: { user: { id: number; role: string; prestataire: { siret: string } | null } } }>();
      expect(body.data.user).toMatchObject({ id: prestataire.user.id, role: 'prestataire' });
      expect(body.data.user.prestataire?.siret).toBe(prestataire.profile!.siret);
    });

    it('refuses to link an account already linked to another Google identity', async () => {
      const email = `twice${unique()}@gmail.test`;
      expect((await signIn('google', { id_token: await google({ email, subject: 'google-first-identity' }) })).statusCode).toBe(201);
      const res = await signIn('google', { id_token: await google({ email, subject: 'google-second-identity' }) });
      expectError(res, 409, 'conflict');
    });

    it('accepts the issuer spelled without a scheme, and any configured client id', async () => {
      const res = await signIn('google', { id_token: await google({ issuer: 'accounts.google.com', audience: GOOGLE_IOS_CLIENT }) });
      expect(res.statusCode, res.body).toBe(201);
    });

    it('accepts a matching nonce, raw or as its SHA-256', async () => {
      const nonce = `n-${unique()}-abc`;
      expect((await signIn('google', { id_token: await google({ nonce }), nonce })).statusCode).toBe(201);
      expect((await signIn('google', { id_token: await google({ nonce: sha256Hex(nonce) }), nonce })).statusCode).toBe(201);
    });
  });

  describe('Apple', () => {
    it('keeps the names sent beside the first token and accepts a private relay address', async () => {
      const email = `x${unique()}abc@privaterelay.appleid.com`;
      const nonce = `apple-nonce-${unique()}`;
      const token = await apple({ email, subject: 'apple-001', emailVerified: 'true', nonce: sha256Hex(nonce), claims: { is_private_email: 'true' } });
      const res = await signIn('apple', { id_token: token, nonce, first_name: ' Zoé ', last_name: 'Dupont' });
      expect(res.statusCode, res.body).toBe(201);
      const { data } = res.json<AuthBody>();
      expect(data.user).toMatchObject({ role: 'client', email, first_name: 'Zoé', last_name: 'Dupont', email_verified: true });
      expect((await userRow(data.user.id)).appleSubject).toBe('apple-001');

      // Apple sends no names after the first time; the account keeps them.
      const again = await signIn('apple', { id_token: await apple({ email, subject: 'apple-001' }) });
      expect(again.statusCode, again.body).toBe(200);
      expect(again.json<AuthBody>().data.user).toMatchObject({ id: data.user.id, first_name: 'Zoé', last_name: 'Dupont' });
    });

    it('links Apple to an account that already signs in with Google', async () => {
      const email = `both${unique()}@icloud.test`;
      const viaGoogle = await signIn('google', { id_token: await google({ email }) });
      const viaApple = await signIn('apple', { id_token: await apple({ email, subject: 'apple-both' }) });
      expect(viaApple.statusCode, viaApple.body).toBe(200);
      expect(viaApple.json<AuthBody>().data.user.id).toBe(viaGoogle.json<AuthBody>().data.user.id);
    });
  });

  describe('refused tokens (one generic 401)', () => {
    it('wrong issuer', async () => {
      await expectRefused('google', { id_token: await google({ issuer: 'https://accounts.evil.test' }) });
      // An Apple token is not a Google token.
      await expectRefused('google', { id_token: await google({ issuer: 'https://appleid.apple.com' }) });
      await expectRefused('apple', { id_token: await apple({ issuer: 'https://accounts.google.com' }) });
    });

    it('wrong audience', async () => {
      await expectRefused('google', { id_token: await google({ audience: 'someone-else.apps.googleusercontent.com' }) });
      await expectRefused('apple', { id_token: await apple({ audience: GOOGLE_CLIENT }) });
    });

    it('signed by a key the provider does not publish', async () => {
      await expectRefused('google', { id_token: await google({ key: rogueKey }) });
      await expectRefused('google', { id_token: await google({ key: impostorKey }) });
      // Google's key is not Apple's.
      await expectRefused('apple', { id_token: await apple({ key: googleKey }) });
    });

    it('expired', async () => {
      const now = Math.floor(Date.now() / 1000);
      await expectRefused('google', { id_token: await google({ issuedAt: now - 7200, expiresAt: now - 3600 }) });
    });

    it('nonce missing or different', async () => {
      await expectRefused('google', { id_token: await google({ nonce: 'the-nonce' }), nonce: 'another-nonce' });
      await expectRefused('google', { id_token: await google(), nonce: 'expected-nonce' });
      await expectRefused('apple', { id_token: await apple({ nonce: sha256Hex('other') }), nonce: 'expected-nonce' });
    });

    it('e-mail missing or not verified', async () => {
      await expectRefused('google', { id_token: await google({ emailVerified: false }) });
      await expectRefused('google', { id_token: await google({ emailVerified: 'false' }) });
      await expectRefused('google', { id_token: await google({ emailVerified: null }) });
      await expectRefused('google', { id_token: await google({ email: null }) });
      await expectRefused('apple', { id_token: await apple({ emailVerified: null }) });
    });

    it('unsigned (alg none) and HMAC-signed tokens', async () => {
      const now = Math.floor(Date.now() / 1000);
      const claims = { email: `none${unique()}@gmail.test`, email_verified: true };
      const unsigned = new UnsecuredJWT(claims)
        .setIssuer('https://accounts.google.com')
        .setAudience(GOOGLE_CLIENT)
        .setSubject('attacker')
        .setIssuedAt(now)
        .setExpirationTime(now + 600)
        .encode();
      await expectRefused('google', { id_token: unsigned });

      // HS256 "signed" with the public key's modulus: the classic algorithm-confusion attack.
      const hmac = await new SignJWT(claims)
        .setProtectedHeader({ alg: 'HS256', kid: googleKey.kid })
        .setIssuer('https://accounts.google.com')
        .setAudience(GOOGLE_CLIENT)
        .setSubject('attacker')
        .setIssuedAt(now)
        .setExpirationTime(now + 600)
        .sign(new TextEncoder().encode(googleKey.jwk.n!));
      await expectRefused('google', { id_token: hmac });
    });

    it('not a JWT at all', async () => {
      await expectRefused('google', { id_token: 'not-a-token' });
      await expectRefused('apple', { id_token: 'a.b.c' });
    });

    it('refuses each for its own reason (the verifier, without the route)', async () => {
      const verifier = createJwksIdentityVerifier({ provider: 'google', clientIds: [GOOGLE_CLIENT], jwksUrl: jwks.url('/google') });
      const reason = async (token: string, nonce?: string) => {
        const error = await verifier.verify(token, { nonce }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(InvalidIdentityTokenError);
        const cause = (error as Error).cause as { code?: string } | undefined;
        return cause?.code ?? (error as Error).message;
      };
      const now = Math.floor(Date.now() / 1000);
      expect(await reason(await google({ issuer: 'https://accounts.evil.test' }))).toBe('ERR_JWT_CLAIM_VALIDATION_FAILED');
      expect(await reason(await google({ audience: 'other' }))).toBe('ERR_JWT_CLAIM_VALIDATION_FAILED');
      expect(await reason(await google({ key: rogueKey }))).toBe('ERR_JWKS_NO_MATCHING_KEY');
      expect(await reason(await google({ key: impostorKey }))).toBe('ERR_JWS_SIGNATURE_VERIFICATION_FAILED');
      expect(await reason(await google({ issuedAt: now - 7200, expiresAt: now - 3600 }))).toBe('ERR_JWT_EXPIRED');
      expect(await reason(await google({ nonce: 'a' }), 'b')).toBe('nonce mismatch');
      expect(await reason(await google({ emailVerified: false }))).toBe('e-mail not verified');
      expect(await reason(await google({ email: null }))).toBe('missing e-mail');
      const unsigned = new UnsecuredJWT({ email: 'x@gmail.test', email_verified: true })
        .setIssuer('https://accounts.google.com')
        .setAudience(GOOGLE_CLIENT)
        .setSubject('attacker')
        .setIssuedAt(now)
        .setExpirationTime(now + 600)
        .encode();
      expect(await reason(unsigned)).toBe('ERR_JOSE_ALG_NOT_ALLOWED');
    });

    it('creates nothing for a refused token', async () => {
      const email = `refused${unique()}@gmail.test`;
      await expectRefused('google', { id_token: await google({ email, audience: 'other' }) });
      expect(await t.database.db.select().from(users).where(eq(users.email, email))).toHaveLength(0);
    });
  });

  describe('accounts that may not sign in', () => {
    it('answers 403 for a suspended or banned account, found by subject or by e-mail', async () => {
      const first = await signIn('google', { id_token: await google({ subject: 'google-suspended' }) });
      const id = first.json<AuthBody>().data.user.id;
      await t.database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, id));
      expectError(await signIn('google', { id_token: await google({ subject: 'google-suspended' }) }), 403, 'forbidden');

      const banned = await createClient(t);
      await t.database.db.update(users).set({ status: 'banned' }).where(eq(users.id, banned.user.id));
      expectError(await signIn('apple', { id_token: await apple({ email: banned.email }) }), 403, 'forbidden');
      // Nothing was linked to the banned account.
      expect((await userRow(banned.user.id)).appleSubject).toBeNull();
    });
  });

  describe('input', () => {
    it('answers 422 without an id_token', async () => {
      const body = expectError(await signIn('google', {}), 422, 'validation_error');
      expect(body.errors).toHaveProperty('id_token');
      expectError(await signIn('apple', { id_token: '' }), 422, 'validation_error');
    });
  });
});

describe('social sign-in unavailable', () => {
  let t: TestApp;
  let jwks: Awaited<ReturnType<typeof startJwksServer>>;
  let appleKey: SigningKey;

  beforeAll(async () => {
    appleKey = await signingKey('apple-1');
    jwks = await startJwksServer({});
    // Google has no client id; Apple's key endpoint is down.
    t = await buildTestApp({ APPLE_CLIENT_IDS: APPLE_CLIENT, APPLE_JWKS_URL: jwks.url('/broken') });
  });
  afterAll(async () => {
    await t?.close();
    await jwks?.close();
  });

  const appleToken = () =>
    idToken({ key: appleKey, issuer: 'https://appleid.apple.com', audience: APPLE_CLIENT, email: `down${unique()}@icloud.test` });

  it('answers 503 when the provider is not configured', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/auth/social/google', payload: { id_token: 'anything' } });
    const body = expectError(res, 503, 'service_unavailable');
    expect(body.message).toBe('Google sign-in is not configured');
  });

  it("answers 503, not 500 or 401, when the provider's keys cannot be fetched", async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/auth/social/apple', payload: { id_token: await appleToken() } });
    expectError(res, 503, 'service_unavailable');
  });

  it('answers 503 when the key server does not answer at all', async () => {
    await jwks.close();
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/auth/social/apple', payload: { id_token: await appleToken() } });
    expectError(res, 503, 'service_unavailable');
  });
});
