import jwt from '@fastify/jwt';
import { AppError } from '@repo/http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

/** Who is calling: passed to services so that every query is scoped by it. */
export interface Actor {
  userId: number;
  sessionId: string;
  role: string;
  requestId: string;
}

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
      /** Hook factory: 403 unless the authenticated actor has one of the roles. */
      requireRole(...roles: string[]): (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
      /** The user a bearer token names, from its signature alone (no database): for rate-limit keys. */
      peekSubject(request: FastifyRequest): string | undefined;
      store: SessionStore;
    };
  }
  interface FastifyRequest {
    actor: Actor | null;
    tokenClaims?: TokenClaims | null;
  }
}

function bearer(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/** The authenticated actor of a request; throws 401 where a route forgot its hook. */
export function requireActor(request: FastifyRequest): Actor {
  if (!request.actor) throw new AppError('unauthenticated', 'Authentication required');
  return request.actor;
}

export const authPlugin = fp<AuthPluginOptions>(
  async (app: FastifyInstance, options) => {
    await app.register(jwt, { secret: options.secret, sign: { algorithm: 'HS256' }, verify: { algorithms: ['HS256'] } });
    app.decorateRequest('actor', null);
    app.decorateRequest('tokenClaims', undefined);

    function claims(request: FastifyRequest): TokenClaims | null {
      if (request.tokenClaims !== undefined) return request.tokenClaims;
      const token = bearer(request);
      let result: TokenClaims | null = null;
      if (token) {
        try {
          const decoded = app.jwt.verify<Partial<TokenClaims>>(token);
          if (typeof decoded.sub === 'string' && typeof decoded.sid === 'string' && /^\d+$/.test(decoded.sub)) {
            result = { sub: decoded.sub, sid: decoded.sid };
          }
        } catch {
          result = null;
        }
      }
      request.tokenClaims = result;
      return result;
    }

    async function authenticate(request: FastifyRequest) {
      if (request.actor) return;
      const c = claims(request);
      if (!c) throw new AppError('unauthenticated', 'A valid bearer token is required');
      const userId = Number(c.sub);
      const session = await options.store.resolve(c.sid, userId);
      if (!session) throw new AppError('unauthenticated', 'The session has ended; sign in again');
      request.actor = { userId, sessionId: c.sid, role: session.role, requestId: request.id };
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
      requireRole(...roles: string[]) {
        return async (request: FastifyRequest) => {
          await authenticate(request);
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
