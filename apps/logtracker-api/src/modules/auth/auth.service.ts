import { hashPassword, verifyAgainstDecoy, verifyPassword, type LoginThrottle, type SessionStore } from '@repo/auth';
import { AppError } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import * as repo from './auth.repository.js';
import type { LoginBody, RegisterBody } from './auth.schemas.js';

export function createAuthService(deps: { db: DbTx; throttle: LoginThrottle; sessions: SessionStore }) {
  const { db } = deps;
  return {
    async register(body: RegisterBody) {
      const existing = await repo.findUserByEmail(db, body.email);
      if (existing) {
        throw new AppError('conflict', 'An account with this e-mail already exists', {
          errors: { email: ['The email has already been taken'] },
        });
      }
      const user = await repo.insertUser(db, {
        name: body.name,
        email: body.email,
        passwordHash: await hashPassword(body.password),
      });
      if (!user) {
        throw new AppError('conflict', 'An account with this e-mail already exists', {
          errors: { email: ['The email has already been taken'] },
        });
      }
      return user;
    },

    /** Uniform failure whatever went wrong, throttled per e-mail and per IP. */
    async login(body: LoginBody, ip: string) {
      await deps.throttle.check(body.email, ip);
      const user = await repo.findUserByEmail(db, body.email);
      const ok = user ? await verifyPassword(user.passwordHash, body.password) : await verifyAgainstDecoy(body.password);
      if (!user || !ok) {
        await deps.throttle.fail(body.email, ip);
        throw new AppError('unauthenticated', 'These credentials do not match our records');
      }
      await deps.throttle.succeed(body.email, ip);
      return user;
    },

    logout: (sessionId: string) => deps.sessions.revoke(sessionId),

    async me(userId: number) {
      const user = await repo.findUserProfile(db, userId);
      if (!user) throw new AppError('unauthenticated', 'The session has ended; sign in again');
      return user;
    },
  };
}

export type AuthService = ReturnType<typeof createAuthService>;
