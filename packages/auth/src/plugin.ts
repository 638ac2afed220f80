import jwt from '@fastify/jwt';
import { AppError } from '@repo/http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { verifiedTokens } from './verified-tokens.js';

/** Who is calling: passed to services so that every query is scoped by it. */
export interface Actor {
  userId: number;
  sessionId: string;
  role: string;
  requestId: string;
}

/**
 * The caller a signed token names, before its session is found live: what a read may be scoped by
 * while the session is checked alongside it (`whileAuthenticated`). Its role comes with the check.
 */
export type Caller = Omit<Actor, 'role'>;

export interface TokenClaims {
  sub: string;
  sid: string;
}

/**
 * The app's sessions table behind the bearer tokens. `resolve` answers the actor of a live session
 * (not revoked, not idle past its lifetime, user allowed to sign in) and slides its `last_used_at`.
 */
export interface SessionStore {
  create(input: { userId: number; ip: string; userAgent?: string }): Promise<{ id: string }>;
  resolve(sessionId: string, userId: number): Promise<{ role: string } | null>;
  revoke(sessionId: string): Promise<void>;
  revokeAllForUser(userId: number, exceptSessionId?: string): Promise<void>;
}

export interface AuthPluginOptions {
  secret: string;
  store: SessionStore;
}

declare module 'fastify' {
  interface FastifyInstance {
    auth: {
      /** Opens a session for a user and returns its bearer token. */
      issueToken(userId: number, request: FastifyRequest): Promise<{ token: string; sessionId: string }>;
      /** onRequest/preHandler hook: 401 unless a live session's token is presented. */
      authenticate(request: FastifyRequest, reply?: FastifyReply): Promise<void>;
      /**
       * onRequest/preHandler hook of a public route that says more to a signed-in caller: no token
       * leaves `request.actor` null; a token, once sent, must be a live session's (401 otherwise).
       */
      authenticateOptional(request: FastifyRequest, reply?: FastifyReply): Promise<void>;
      /** Hook factory: 403 unless the authenticated actor has one of the roles. */
      requireRole(...roles: string[]): (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
      /** The user a bearer token names, from its signature alone (no database): for rate-limit keys. */
      peekSubject(request: FastifyRequest): string | undefined;
      store: SessionStore;
    };
  }
  interface FastifyRequest {
    actor: Actor | null;
  }
  interface FastifyContextConfig {
    auth?: {
      /**
       * The query parameter that may carry the bearer token on this route, for clients that cannot
       * set headers (a browser's WebSocket or EventSource). The Authorization header wins when both
       * are sent. Declare it on as few routes as possible: a URL travels further than a header; the
       * request log redacts it (redactUrl in @repo/http).
       */
      queryToken?: string;
      /**
       * A route that only reads (GET or HEAD) may start its reads while the session is checked, a
       * round trip fewer: `request.actor` stays null until the check passes, and the handler runs
       * its reads through `whileAuthenticated(request, (caller) => …)`, which answers once both are
       * done, the check's 401 first. A handler that reads `requireActor` instead answers 401,
       * always: it fails closed.
       */
      checkAlongside?: boolean;
    };
  }
}

/**
 * The token the request presents, `undefined` when it presents none: the Authorization header, or
 * the route's query parameter when it declares one. A header that is there but not `Bearer <token>`
 * answers `''`, a token that verifies as nothing, so that it is refused rather than ignored.
 */
function presentedToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header !== undefined) return /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] ?? '';
  const param = request.routeOptions.config?.auth?.queryToken;
  if (!param) return undefined;
  const value = (request.query as Record<string, unknown> | undefined)?.[param];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The authenticated actor of a request; throws 401 where a route forgot its hook. */
export function requireActor(request: FastifyRequest): Actor {
  if (!request.actor) throw new AppError('unauthenticated', 'Authentication required');
  return request.actor;
}

/** The session checks under way beside a read (config.auth.checkAlongside), by request. */
const checksUnderWay = new WeakMap<FastifyRequest, { caller: Caller; check: Promise<void> }>();

/**
 * Runs `work` while `check` runs, and answers what it answered once `check` has passed: a failed
 * check wins over whatever `work` did (answered, or failed with an error of its own), so that
 * `work` reads, but never answers, before its caller is known to be allowed. `work` must only read.
 */
export async function alongside<T>(check: Promise<unknown>, work: () => Promise<T>): Promise<T> {
  // A `work` that throws before its first await fails as a rejection, judged after the check too.
  const running = Promise.resolve().then(work);
  // Judged after the check: a rejection meanwhile must not go unhandled.
  running.catch(() => undefined);
  await check;
  return running;
}

/**
 * The reads of a route that checks its session alongside them (config.auth.checkAlongside): `work`
 * gets the caller the token names and starts at once; the answer waits for the session's check,
 * whose 401 wins. On any other authenticated route, `work` gets the actor, after the check.
 */
export function whileAuthenticated<T>(request: FastifyRequest, work: (caller: Caller) => Promise<T>): Promise<T> {
  const underWay = checksUnderWay.get(request);
  if (!underWay) return work(requireActor(request));
  return alongside(underWay.check, () => work(underWay.caller));
}

/** How many verified tokens the plugin remembers (about 0.6 KiB each), and for how long at most. */
const VERIFIED_TOKENS_CACHED = 10_000;
const VERIFIED_TOKEN_TTL_MS = 10 * 60_000;

/**
 * The longest token verified: the plugin's own are about 250 characters. A longer one is refused
 * unread, which also bounds what the cache of verified tokens can hold.
 */
export const MAX_TOKEN_LENGTH = 1024;

export const authPlugin = fp<AuthPluginOptions>(
  async (app: FastifyInstance, options) => {
    await app.register(jwt, { secret: options.secret, sign: { algorithm: 'HS256' }, verify: { algorithms: ['HS256'] } });
    // A cached token still names a session that `resolve` checks on every request (logout, idle expiry).
    const recent = verifiedTokens<TokenClaims | null>({ max: VERIFIED_TOKENS_CACHED, ttlMs: VERIFIED_TOKEN_TTL_MS });
    app.decorateRequest('actor', null);
    // The rate limiter peeks at the token before the route's hook authenticates: verify it once.
    const verified = new WeakMap<FastifyRequest, TokenClaims | null>();

    function claims(request: FastifyRequest): TokenClaims | null {
      const cached = verified.get(request);
      if (cached !== undefined) return cached;
      const token = presentedToken(request);
      let result: TokenClaims | null = null;
      if (token && token.length <= MAX_TOKEN_LENGTH) {
        const known = recent.get(token);
        if (known !== undefined) {
          result = known;
        } else {
          try {
            const decoded = app.jwt.verify<Partial<TokenClaims> & { exp?: unknown }>(token);
            if (typeof decoded.sub === 'string' && typeof decoded.sid === 'string' && /^\d+$/.test(decoded.sub)) {
              result = { sub: decoded.sub, sid: decoded.sid };
            }
            // Well signed, even with claims the plugin refuses: the answer is the same next time.
            recent.set(token, result, typeof decoded.exp === 'number' ? decoded.exp : undefined);
          } catch {
            result = null;
          }
        }
      }
      verified.set(request, result);
      return result;
    }

    /**
     * Finds the token's session live and sets `request.actor`; on a route that checks its session
     * alongside its reads (and where `mayDefer`), starts the check and leaves it to
     * whileAuthenticated.
     */
    async function authenticateRequest(request: FastifyRequest, mayDefer: boolean) {
      if (request.actor) return;
      const underWay = checksUnderWay.get(request);
      if (underWay) {
        if (!mayDefer) await underWay.check;
        return;
      }
      const c = claims(request);
      if (!c) throw new AppError('unauthenticated', 'A valid bearer token is required');
      const caller: Caller = { userId: Number(c.sub), sessionId: c.sid, requestId: request.id };
      const check = options.store.resolve(c.sid, caller.userId).then((session) => {
        if (!session) throw new AppError('unauthenticated', 'The session has ended; sign in again');
        request.actor = { ...caller, role: session.role };
      });
      if (mayDefer && request.routeOptions.config?.auth?.checkAlongside && (request.method === 'GET' || request.method === 'HEAD')) {
        // Awaited by whileAuthenticated; a handler that never gets there answers 401 anyway.
        check.catch(() => undefined);
        checksUnderWay.set(request, { caller, check });
        return;
      }
      await check;
    }

    const authenticate = (request: FastifyRequest) => authenticateRequest(request, true);

    // A bad token on a public route answers 401 rather than being ignored (as GitHub's API does): a
    // client that sends a token expects it to count, and a page quietly shown as to a stranger would
    // hide an expired session.
    async function authenticateOptional(request: FastifyRequest) {
      if (presentedToken(request) === undefined) return;
      await authenticate(request);
    }

    app.decorate('auth', {
      store: options.store,
      async issueToken(userId: number, request: FastifyRequest) {
        const session = await options.store.create({
          userId,
          ip: request.ip,
          userAgent: request.headers['user-agent']?.slice(0, 512),
        });
        // The session row, not the token, decides validity: logout revokes at once, and an idle
        // session expires server-side whatever the token says.
        const token = app.jwt.sign({ sub: String(userId), sid: session.id });
        return { token, sessionId: session.id };
      },
      authenticate,
      authenticateOptional,
      requireRole(...roles: string[]) {
        return async (request: FastifyRequest) => {
          // The role is the check's: never left alongside.
          await authenticateRequest(request, false);
          if (!roles.includes(requireActor(request).role)) {
            throw new AppError('forbidden', 'Your role does not allow this action');
          }
        };
      },
      peekSubject(request: FastifyRequest) {
        return claims(request)?.sub;
      },
    });
  },
  { name: 'auth', dependencies: ['error-handler'] },
);
