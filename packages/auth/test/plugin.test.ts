import { createServer, registerFoundation, type AppInstance } from '@repo/http';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { AppError } from '@repo/http';
import { alongside, authPlugin, generateSessionId, MAX_TOKEN_LENGTH, requireActor, whileAuthenticated, type SessionStore } from '../src/index.js';

/** A test peer of the apps' sessions table: sessions in a Map, roles per user. */
class MemorySessionStore implements SessionStore {
  readonly sessions = new Map<string, { userId: number; ip: string; userAgent?: string; revoked: boolean }>();
  readonly roles = new Map<number, string>();
  resolveCalls = 0;
  /** While set, `resolve` answers only once it settles: a session check still under way. */
  gate: Promise<void> | undefined;

  async create(input: { userId: number; ip: string; userAgent?: string }) {
    const id = generateSessionId();
    this.sessions.set(id, { ...input, revoked: false });
    return { id };
  }

  async resolve(sessionId: string, userId: number) {
    this.resolveCalls += 1;
    await this.gate;
    const session = this.sessions.get(sessionId);
    const role = this.roles.get(userId);
    if (!session || session.revoked || session.userId !== userId || !role) return null;
    return { role };
  }

  async revoke(sessionId: string) {
    const session = this.sessions.get(sessionId);
    if (session) session.revoked = true;
  }

  async revokeAllForUser(userId: number, exceptSessionId?: string) {
    for (const [id, session] of this.sessions) {
      if (session.userId === userId && id !== exceptSessionId) session.revoked = true;
    }
  }
}

const SECRET = 'test-secret-that-is-long-enough-for-hs256-0123456789';
const ALICE = 1; // a user
const ADMIN = 2; // an admin

async function buildAuthApp(store: SessionStore, secret = SECRET): Promise<AppInstance> {
  const app = createServer({ logLevel: 'silent' });
  await app.register(authPlugin, { secret, store });
  app.post<{ Body: { userId: number } }>('/login', async (request, reply) => {
    const issued = await app.auth.issueToken(request.body.userId, request);
    return reply.status(201).send({ data: issued });
  });
  app.get('/me', { onRequest: app.auth.authenticate }, async (request) => ({ data: requireActor(request) }));
  app.get('/admin', { onRequest: app.auth.requireRole('admin') }, async (request) => ({
    data: { role: requireActor(request).role },
  }));
  app.get('/staff', { onRequest: app.auth.requireRole('admin', 'mechanic') }, async () => ({ data: 'ok' }));
  app.get('/peek', async (request) => ({ data: { sub: app.auth.peekSubject(request) ?? null } }));
  app.get('/maybe', { onRequest: app.auth.authenticateOptional }, async (request) => ({ data: request.actor }));
  app.get('/stream', { onRequest: app.auth.authenticate, config: { auth: { queryToken: 'access_token' } } }, async (request) => ({
    data: { userId: requireActor(request).userId, peeked: app.auth.peekSubject(request) ?? null },
  }));
  app.get('/maybe-stream', { onRequest: app.auth.authenticateOptional, config: { auth: { queryToken: 'access_token' } } }, async (request) => ({
    data: request.actor?.userId ?? null,
  }));
  // Reads while the session is checked (config.auth.checkAlongside); `?missing` reads as not found.
  app.get<{ Querystring: { missing?: string } }>('/alongside', { onRequest: app.auth.authenticate, config: { auth: { checkAlongside: true } } }, async (request) =>
    whileAuthenticated(request, async (caller) => {
      reads.push({ userId: caller.userId, actorSet: request.actor !== null });
      if (request.query.missing !== undefined) throw AppError.notFound('Thing');
      return { data: caller };
    }),
  );
  app.get('/alongside-forgot', { onRequest: app.auth.authenticate, config: { auth: { checkAlongside: true } } }, async (request) => ({
    data: requireActor(request).userId,
  }));
  app.get('/alongside-admin', { onRequest: app.auth.requireRole('admin'), config: { auth: { checkAlongside: true } } }, async (request) => ({
    data: requireActor(request).role,
  }));
  app.post('/alongside-write', { onRequest: app.auth.authenticate, config: { auth: { checkAlongside: true } } }, async (request) => ({
    data: requireActor(request).userId,
  }));
  app.get('/forgot-hook', async (request) => ({ data: requireActor(request) }));
  app.post('/logout', { onRequest: app.auth.authenticate }, async (request) => {
    await app.auth.store.revoke(requireActor(request).sessionId);
    return { message: 'Signed out' };
  });
  await app.ready();
  return app;
}

async function login(app: AppInstance, userId: number, userAgent = 'vitest'): Promise<{ token: string; sessionId: string }> {
  const res = await app.inject({ method: 'POST', url: '/login', payload: { userId }, headers: { 'user-agent': userAgent } });
  expect(res.statusCode).toBe(201);
  return (JSON.parse(res.body) as { data: { token: string; sessionId: string } }).data;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

function body(res: { body: string }): Record<string, unknown> {
  return JSON.parse(res.body) as Record<string, unknown>;
}

/** Re-encodes one part of a JWT with changed claims, keeping the original signature. */
function withClaims(token: string, claims: Record<string, unknown>): string {
  const [header, payload, signature] = token.split('.');
  const decoded = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as Record<string, unknown>;
  const forged = Buffer.from(JSON.stringify({ ...decoded, ...claims })).toString('base64url');
  return `${header}.${forged}.${signature}`;
}

let store: MemorySessionStore;
let app: AppInstance;
/** What the reads of /alongside saw when they ran. */
const reads: { userId: number; actorSet: boolean }[] = [];

beforeAll(async () => {
  store = new MemorySessionStore();
  app = await buildAuthApp(store);
});

afterAll(async () => {
  await app.close();
});

beforeEach(() => {
  reads.length = 0;
  store.gate = undefined;
  store.sessions.clear();
  store.roles.clear();
  store.roles.set(ALICE, 'user');
  store.roles.set(ADMIN, 'admin');
});

describe('issueToken', () => {
  it('opens a session in the store and signs a token naming it', async () => {
    const { token, sessionId } = await login(app, ALICE, 'Mozilla/5.0 (test)');
    expect(token.split('.')).toHaveLength(3);
    const session = store.sessions.get(sessionId);
    expect(session).toEqual({ userId: ALICE, ip: '127.0.0.1', userAgent: 'Mozilla/5.0 (test)', revoked: false });

    const claims = app.jwt.decode<{ sub: string; sid: string; iat: number }>(token);
    expect(claims).toMatchObject({ sub: String(ALICE), sid: sessionId });
    expect(typeof claims!.iat).toBe('number');
    const header = JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()) as { alg: string };
    expect(header.alg).toBe('HS256');
  });

  it('keeps at most 512 characters of the user agent', async () => {
    const { sessionId } = await login(app, ALICE, 'x'.repeat(2000));
    expect(store.sessions.get(sessionId)!.userAgent).toHaveLength(512);
  });

  it('opens a new session for each sign-in', async () => {
    const first = await login(app, ALICE);
    const second = await login(app, ALICE);
    expect(second.sessionId).not.toBe(first.sessionId);
    expect(store.sessions.size).toBe(2);
  });
});

describe('authenticate', () => {
  it('accepts the issued token and names the actor', async () => {
    const { token, sessionId } = await login(app, ALICE);
    const res = await app.inject({ method: 'GET', url: '/me', headers: { ...bearer(token), 'x-request-id': 'req-me-1' } });
    expect(res.statusCode).toBe(200);
    expect(body(res).data).toEqual({ userId: ALICE, sessionId, role: 'user', requestId: 'req-me-1' });
  });

  it('accepts the scheme in any case and surrounding whitespace', async () => {
    const { token } = await login(app, ALICE);
    for (const header of [`bearer ${token}`, `BEARER  ${token}`, `Bearer ${token}  `]) {
      const res = await app.inject({ method: 'GET', url: '/me', headers: { authorization: header } });
      expect(res.statusCode).toBe(200);
    }
  });

  it('answers 401 unauthenticated without a token', async () => {
    const res = await app.inject({ method: 'GET', url: '/me' });
    expect(res.statusCode).toBe(401);
    expect(body(res)).toEqual({ error: 'unauthenticated', message: expect.any(String) });
  });

  it('answers 401 for malformed Authorization headers', async () => {
    const { token } = await login(app, ALICE);
    for (const header of ['Bearer', 'Bearer ', `Basic ${token}`, token, `Bearer ${token} extra`, 'Bearer a.b']) {
      const res = await app.inject({ method: 'GET', url: '/me', headers: { authorization: header } });
      expect(res.statusCode).toBe(401);
      expect(body(res).error).toBe('unauthenticated');
    }
  });

  it('answers 401 for a garbage token', async () => {
    const res = await app.inject({ method: 'GET', url: '/me', headers: bearer('not.a.jwt') });
    expect(res.statusCode).toBe(401);
    expect(body(res).error).toBe('unauthenticated');
  });

  it('answers 401 for a tampered token (claims changed, signature kept)', async () => {
    const { token } = await login(app, ALICE);
    const asAdmin = withClaims(token, { sub: String(ADMIN) });
    const res = await app.inject({ method: 'GET', url: '/me', headers: bearer(asAdmin) });
    expect(res.statusCode).toBe(401);
    expect(body(res).error).toBe('unauthenticated');

    // A flipped character in the signature is refused too.
    const signature = token.split('.')[2]!;
    const flipped = `${token.slice(0, token.length - signature.length)}${signature[0] === 'A' ? 'B' : 'A'}${signature.slice(1)}`;
    expect((await app.inject({ method: 'GET', url: '/me', headers: bearer(flipped) })).statusCode).toBe(401);
  });

  it('answers 401 for an unsigned token (alg none)', async () => {
    const { sessionId } = await login(app, ALICE);
    const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
    const payload = Buffer.from(JSON.stringify({ sub: String(ALICE), sid: sessionId })).toString('base64url');
    const res = await app.inject({ method: 'GET', url: '/me', headers: bearer(`${header}.${payload}.`) });
    expect(res.statusCode).toBe(401);
  });

  it('answers 401 for a token signed with another secret', async () => {
    const otherStore = new MemorySessionStore();
    otherStore.roles.set(ALICE, 'user');
    const other = await buildAuthApp(otherStore, 'a-completely-different-secret-of-decent-length-987654');
    try {
      const { token, sessionId } = await login(other, ALICE);
      // Even with a live session of that id here, the foreign signature is refused.
      store.sessions.set(sessionId, { userId: ALICE, ip: '127.0.0.1', revoked: false });
      const res = await app.inject({ method: 'GET', url: '/me', headers: bearer(token) });
      expect(res.statusCode).toBe(401);
      expect(body(res).error).toBe('unauthenticated');
      // The other app accepts its own token.
      expect((await other.inject({ method: 'GET', url: '/me', headers: bearer(token) })).statusCode).toBe(200);
    } finally {
      await other.close();
    }
  });

  it('answers 401 for a validly signed token with a non-numeric subject or without a session id', async () => {
    const { sessionId } = await login(app, ALICE);
    for (const claims of [{ sub: 'alice', sid: sessionId }, { sub: String(ALICE) }, { sub: 1, sid: sessionId }, {}]) {
      const token = app.jwt.sign(claims);
      expect((await app.inject({ method: 'GET', url: '/me', headers: bearer(token) })).statusCode).toBe(401);
    }
  });

  it('answers 401 for an expired token', async () => {
    const { sessionId } = await login(app, ALICE);
    const token = app.jwt.sign({ sub: String(ALICE), sid: sessionId, exp: Math.floor(Date.now() / 1000) - 60 });
    expect((await app.inject({ method: 'GET', url: '/me', headers: bearer(token) })).statusCode).toBe(401);
  });

  it('refuses a token once it expires, though it was verified (and cached) while valid', async () => {
    const { sessionId } = await login(app, ALICE);
    const token = app.jwt.sign({ sub: String(ALICE), sid: sessionId, exp: Math.floor(Date.now() / 1000) + 1 });
    expect((await app.inject({ method: 'GET', url: '/me', headers: bearer(token) })).statusCode).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    expect((await app.inject({ method: 'GET', url: '/me', headers: bearer(token) })).statusCode).toBe(401);
  });

  it('verifies anew a token one character off a cached one (the cache is keyed by the whole token)', async () => {
    const { token } = await login(app, ALICE);
    expect((await app.inject({ method: 'GET', url: '/me', headers: bearer(token) })).statusCode).toBe(200);
    // A character inside the signature: the last one's low bits are padding that decoding drops.
    const at = token.length - 10;
    const flipped = token.slice(0, at) + (token[at] === 'A' ? 'B' : 'A') + token.slice(at + 1);
    for (const altered of [flipped, token + 'A', token.slice(0, -1)]) {
      expect((await app.inject({ method: 'GET', url: '/me', headers: bearer(altered) })).statusCode).toBe(401);
    }
    expect((await app.inject({ method: 'GET', url: '/me', headers: bearer(token) })).statusCode).toBe(200);
  });

  it(`refuses unread a token longer than ${MAX_TOKEN_LENGTH} characters, though validly signed`, async () => {
    const { sessionId } = await login(app, ALICE);
    const token = app.jwt.sign({ sub: String(ALICE), sid: sessionId, pad: 'x'.repeat(MAX_TOKEN_LENGTH) });
    expect(token.length).toBeGreaterThan(MAX_TOKEN_LENGTH);
    const res = await app.inject({ method: 'GET', url: '/me', headers: bearer(token) });
    expect(res.statusCode).toBe(401);
    expect(body(res).error).toBe('unauthenticated');
  });

  it('answers 401 when the token names a session of another user', async () => {
    const { sessionId } = await login(app, ADMIN);
    const token = app.jwt.sign({ sub: String(ALICE), sid: sessionId });
    expect((await app.inject({ method: 'GET', url: '/me', headers: bearer(token) })).statusCode).toBe(401);
  });

  it('answers 401 at once when the session is revoked, though the token is still well signed', async () => {
    const { token, sessionId } = await login(app, ALICE);
    expect((await app.inject({ method: 'GET', url: '/me', headers: bearer(token) })).statusCode).toBe(200);
    await store.revoke(sessionId);
    const res = await app.inject({ method: 'GET', url: '/me', headers: bearer(token) });
    expect(res.statusCode).toBe(401);
    expect(body(res)).toEqual({ error: 'unauthenticated', message: 'The session has ended; sign in again' });
  });

  it('logs out through the store: the token stops working on the next request', async () => {
    const { token, sessionId } = await login(app, ALICE);
    const out = await app.inject({ method: 'POST', url: '/logout', headers: bearer(token) });
    expect(out.statusCode).toBe(200);
    expect(store.sessions.get(sessionId)!.revoked).toBe(true);
    expect((await app.inject({ method: 'GET', url: '/me', headers: bearer(token) })).statusCode).toBe(401);
  });

  it('revoking all of a user’s sessions but one keeps only that one', async () => {
    const kept = await login(app, ALICE);
    const dropped = await login(app, ALICE);
    const admin = await login(app, ADMIN);
    await store.revokeAllForUser(ALICE, kept.sessionId);
    expect((await app.inject({ method: 'GET', url: '/me', headers: bearer(kept.token) })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/me', headers: bearer(dropped.token) })).statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: '/me', headers: bearer(admin.token) })).statusCode).toBe(200);
  });

  it('answers 401 when the user may no longer sign in (store resolves nothing)', async () => {
    const { token } = await login(app, ALICE);
    store.roles.delete(ALICE);
    expect((await app.inject({ method: 'GET', url: '/me', headers: bearer(token) })).statusCode).toBe(401);
  });

  it('checks the session on every request', async () => {
    const { token } = await login(app, ALICE);
    const before = store.resolveCalls;
    for (let i = 0; i < 3; i++) await app.inject({ method: 'GET', url: '/me', headers: bearer(token) });
    expect(store.resolveCalls - before).toBe(3);
  });

  it('requireActor answers 401 on a route that forgot its hook', async () => {
    const { token } = await login(app, ALICE);
    const res = await app.inject({ method: 'GET', url: '/forgot-hook', headers: bearer(token) });
    expect(res.statusCode).toBe(401);
    expect(body(res)).toEqual({ error: 'unauthenticated', message: 'Authentication required' });
  });
});

describe('requireRole', () => {
  it('answers 403 forbidden to an actor without the role', async () => {
    const { token } = await login(app, ALICE);
    const res = await app.inject({ method: 'GET', url: '/admin', headers: bearer(token) });
    expect(res.statusCode).toBe(403);
    expect(body(res)).toEqual({ error: 'forbidden', message: expect.any(String) });
  });

  it('lets an actor with the role through', async () => {
    const { token } = await login(app, ADMIN);
    const res = await app.inject({ method: 'GET', url: '/admin', headers: bearer(token) });
    expect(res.statusCode).toBe(200);
    expect(body(res).data).toEqual({ role: 'admin' });
  });

  it('accepts any of several roles', async () => {
    store.roles.set(3, 'mechanic');
    const mechanic = await login(app, 3);
    const admin = await login(app, ADMIN);
    const user = await login(app, ALICE);
    expect((await app.inject({ method: 'GET', url: '/staff', headers: bearer(mechanic.token) })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/staff', headers: bearer(admin.token) })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/staff', headers: bearer(user.token) })).statusCode).toBe(403);
  });

  it('answers 401, not 403, without a valid token', async () => {
    expect((await app.inject({ method: 'GET', url: '/admin' })).statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: '/admin', headers: bearer('garbage') })).statusCode).toBe(401);
  });

  it('uses the role the store answers now, not the one at sign-in', async () => {
    const { token } = await login(app, ALICE);
    expect((await app.inject({ method: 'GET', url: '/admin', headers: bearer(token) })).statusCode).toBe(403);
    store.roles.set(ALICE, 'admin');
    expect((await app.inject({ method: 'GET', url: '/admin', headers: bearer(token) })).statusCode).toBe(200);
  });
});

describe('authenticateOptional', () => {
  it('serves an anonymous caller with no actor', async () => {
    const res = await app.inject({ method: 'GET', url: '/maybe' });
    expect(res.statusCode).toBe(200);
    expect(body(res).data).toBeNull();
  });

  it('names the actor of a valid token', async () => {
    const { token, sessionId } = await login(app, ALICE);
    const res = await app.inject({ method: 'GET', url: '/maybe', headers: { ...bearer(token), 'x-request-id': 'req-maybe' } });
    expect(res.statusCode).toBe(200);
    expect(body(res).data).toEqual({ userId: ALICE, sessionId, role: 'user', requestId: 'req-maybe' });
  });

  it('answers 401 for a token that does not count, rather than serving it as anonymous', async () => {
    const { token, sessionId } = await login(app, ALICE);
    const expired = app.jwt.sign({ sub: String(ALICE), sid: sessionId, exp: Math.floor(Date.now() / 1000) - 60 });
    const forged = withClaims(token, { sub: String(ADMIN) });
    for (const authorization of ['Bearer garbage', `Bearer ${expired}`, `Bearer ${forged}`, `Basic ${token}`, 'Bearer', '']) {
      const res = await app.inject({ method: 'GET', url: '/maybe', headers: { authorization } });
      expect(res.statusCode, authorization).toBe(401);
      expect(body(res)).toEqual({ error: 'unauthenticated', message: expect.any(String) });
    }
    await store.revoke(sessionId);
    const revoked = await app.inject({ method: 'GET', url: '/maybe', headers: bearer(token) });
    expect(revoked.statusCode).toBe(401);
    expect(body(revoked)).toEqual({ error: 'unauthenticated', message: 'The session has ended; sign in again' });
  });

  it('reads no query token on a route that does not declare one', async () => {
    const { token } = await login(app, ALICE);
    const res = await app.inject({ method: 'GET', url: `/maybe?access_token=${token}` });
    expect(res.statusCode).toBe(200);
    expect(body(res).data).toBeNull();
  });
});

describe('token from the query (config.auth.queryToken)', () => {
  it('authenticates with the declared parameter, and the rate limiter’s peek sees it too', async () => {
    const { token } = await login(app, ALICE);
    const res = await app.inject({ method: 'GET', url: `/stream?access_token=${token}` });
    expect(res.statusCode).toBe(200);
    expect(body(res).data).toEqual({ userId: ALICE, peeked: String(ALICE) });
  });

  it('answers 401 for a bad, revoked or empty query token, and without any', async () => {
    const { token, sessionId } = await login(app, ALICE);
    for (const url of ['/stream', '/stream?access_token=', '/stream?access_token=garbage', `/stream?access_token=${withClaims(token, { sub: '2' })}`]) {
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(401);
      expect(body(res).error).toBe('unauthenticated');
    }
    await store.revoke(sessionId);
    expect((await app.inject({ method: 'GET', url: `/stream?access_token=${token}` })).statusCode).toBe(401);
  });

  it('lets the Authorization header win when both are sent', async () => {
    const alice = await login(app, ALICE);
    const admin = await login(app, ADMIN);
    const both = await app.inject({ method: 'GET', url: `/stream?access_token=${admin.token}`, headers: bearer(alice.token) });
    expect(body(both).data).toEqual({ userId: ALICE, peeked: String(ALICE) });
    // A bad header is not rescued by a good query token.
    const badHeader = await app.inject({ method: 'GET', url: `/stream?access_token=${admin.token}`, headers: bearer('garbage') });
    expect(badHeader.statusCode).toBe(401);
  });

  it('is never read on a route that does not declare it', async () => {
    const { token } = await login(app, ALICE);
    expect((await app.inject({ method: 'GET', url: `/me?access_token=${token}` })).statusCode).toBe(401);
    expect(body(await app.inject({ method: 'GET', url: `/peek?access_token=${token}` })).data).toEqual({ sub: null });
  });

  it('combines with the optional mode: absent is anonymous, bad is 401, valid names the caller', async () => {
    const { token } = await login(app, ALICE);
    expect(body(await app.inject({ method: 'GET', url: '/maybe-stream' })).data).toBeNull();
    expect(body(await app.inject({ method: 'GET', url: '/maybe-stream?access_token=' })).data).toBeNull();
    expect((await app.inject({ method: 'GET', url: '/maybe-stream?access_token=garbage' })).statusCode).toBe(401);
    expect(body(await app.inject({ method: 'GET', url: `/maybe-stream?access_token=${token}` })).data).toBe(ALICE);
  });
});

describe('the session checked alongside a read (config.auth.checkAlongside)', () => {
  it('starts the read before the check answers, and answers once the check has passed', async () => {
    const { token, sessionId } = await login(app, ALICE);
    let open!: () => void;
    store.gate = new Promise((resolve) => (open = resolve));
    const answer = app.inject({ method: 'GET', url: '/alongside', headers: bearer(token) });
    await vi.waitFor(() => expect(reads).toHaveLength(1));
    // The read ran while the check was still waiting on the store, before the actor was known.
    expect(reads[0]).toMatchObject({ userId: ALICE, actorSet: false });
    open();
    const res = await answer;
    expect(res.statusCode).toBe(200);
    expect(body(res).data).toEqual({ userId: ALICE, sessionId, requestId: expect.any(String) });
  });

  it('answers 401 for a revoked session, whatever the read found', async () => {
    const { token, sessionId } = await login(app, ALICE);
    await store.revoke(sessionId);
    for (const url of ['/alongside', '/alongside?missing']) {
      const res = await app.inject({ method: 'GET', url, headers: bearer(token) });
      expect(res.statusCode, url).toBe(401);
      expect(body(res).error).toBe('unauthenticated');
    }
  });

  it('answers the read’s own error once the session is live', async () => {
    const { token } = await login(app, ALICE);
    const res = await app.inject({ method: 'GET', url: '/alongside?missing', headers: bearer(token) });
    expect(res.statusCode).toBe(404);
  });

  it('refuses a bad token before any read', async () => {
    const res = await app.inject({ method: 'GET', url: '/alongside', headers: bearer('garbage') });
    expect(res.statusCode).toBe(401);
    expect(reads).toHaveLength(0);
  });

  it('lets a failed check win over a read that threw before its first await, and the read’s error stand after a passed one', async () => {
    const refused = new AppError('unauthenticated', 'ended');
    const thrown = AppError.notFound('Thing');
    const throwsAtOnce = (): Promise<never> => {
      throw thrown;
    };
    await expect(alongside(Promise.reject(refused), throwsAtOnce)).rejects.toBe(refused);
    await expect(alongside(Promise.resolve(), throwsAtOnce)).rejects.toBe(thrown);
    await expect(alongside(Promise.resolve(), async () => 'read')).resolves.toBe('read');
  });

  it('fails closed for a handler that reads the actor rather than going through whileAuthenticated', async () => {
    const { token } = await login(app, ALICE);
    expect((await app.inject({ method: 'GET', url: '/alongside-forgot', headers: bearer(token) })).statusCode).toBe(401);
  });

  it('waits for the check where a role is required, and on a write', async () => {
    const alice = await login(app, ALICE);
    const admin = await login(app, ADMIN);
    expect(body(await app.inject({ method: 'GET', url: '/alongside-admin', headers: bearer(admin.token) })).data).toBe('admin');
    expect((await app.inject({ method: 'GET', url: '/alongside-admin', headers: bearer(alice.token) })).statusCode).toBe(403);
    const write = await app.inject({ method: 'POST', url: '/alongside-write', headers: bearer(alice.token) });
    expect(write.statusCode).toBe(200);
    expect(body(write).data).toBe(ALICE);
  });
});

describe('peekSubject', () => {
  it('names the user of a valid token without asking the store', async () => {
    const { token } = await login(app, ALICE);
    const before = store.resolveCalls;
    const res = await app.inject({ method: 'GET', url: '/peek', headers: bearer(token) });
    expect(body(res).data).toEqual({ sub: String(ALICE) });
    expect(store.resolveCalls).toBe(before);
  });

  it('answers undefined without a token or for an invalid one', async () => {
    const { token } = await login(app, ALICE);
    expect(body(await app.inject({ method: 'GET', url: '/peek' })).data).toEqual({ sub: null });
    expect(body(await app.inject({ method: 'GET', url: '/peek', headers: bearer('garbage') })).data).toEqual({ sub: null });
    const tampered = withClaims(token, { sub: '999' });
    expect(body(await app.inject({ method: 'GET', url: '/peek', headers: bearer(tampered) })).data).toEqual({ sub: null });
    const other = await buildAuthApp(new MemorySessionStore(), 'another-secret-another-secret-another-secret');
    try {
      const foreign = other.jwt.sign({ sub: '5', sid: 'x' });
      expect(body(await app.inject({ method: 'GET', url: '/peek', headers: bearer(foreign) })).data).toEqual({ sub: null });
    } finally {
      await other.close();
    }
  });
});

describe('with the rate limiter', () => {
  it('keys a signed-in caller by user through peekSubject, with the authenticated budget', async () => {
    const limited = createServer({ logLevel: 'silent' });
    const limitedStore = new MemorySessionStore();
    limitedStore.roles.set(ALICE, 'user');
    await limited.register(authPlugin, { secret: SECRET, store: limitedStore });
    await registerFoundation(limited, {
      cors: { origins: [] },
      rateLimit: { authenticated: 5, public: 2, store: 'memory', identify: (request) => limited.auth.peekSubject(request) },
      docs: { title: 'Limited', description: 'Rate-limited test app', version: '1.0.0', prefix: '/docs' },
    });
    limited.get('/me', { onRequest: limited.auth.authenticate }, async (request) => ({ data: requireActor(request).userId }));
    limited.get('/token', { config: { rateLimit: false } }, async (request) => limited.auth.issueToken(ALICE, request));
    try {
      const { token } = JSON.parse((await limited.inject({ method: 'GET', url: '/token' })).body) as { token: string };
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) {
        statuses.push((await limited.inject({ method: 'GET', url: '/me', headers: bearer(token) })).statusCode);
      }
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
      // Anonymous callers of the same address keep their own, smaller budget.
      const anonymous = await limited.inject({ method: 'GET', url: '/me' });
      expect(anonymous.statusCode).toBe(401);
      expect(anonymous.headers['x-ratelimit-limit']).toBe('2');
      // A forged token is no way into the bigger budget.
      const forged = await limited.inject({ method: 'GET', url: '/me', headers: bearer(withClaims(token, { sub: '77' })) });
      expect(forged.headers['x-ratelimit-limit']).toBe('2');
    } finally {
      await limited.close();
    }
  });
});
