import { hashPassword, verifyAgainstDecoy, verifyPassword, type LoginThrottle, type SessionStore } from '@repo/auth';
import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { User } from '../../db/schema/index.js';
import type { Mailer } from '../../integrations/mail/mailer.js';
import type { Actor, Anonymous } from '../../lib/context.js';
import { type ActivityRecorder, userSubject } from '../activity-log/index.js';
import type { EmailVerificationService } from '../email-codes/index.js';
import type { NewAccount, UsersService } from '../user-store/index.js';
import { userRecords as usersRepo } from '../user-store/index.js';
import { passwordChangedNotice } from './auth.mail.js';
import * as repo from './auth.repository.js';
import type { ChangePasswordBody, LoginBody, RegisterClientBody, RegisterPrestataireBody } from './auth.schemas.js';

/** How recent a sign-in must be to stand in for a password an account does not have. */
export const RECENT_SIGN_IN_MS = 15 * 60_000;

const BAD_CREDENTIALS = 'These credentials do not match our records';

export function createAuthService(deps: {
  db: DbTx;
  users: UsersService;
  throttle: LoginThrottle;
  sessions: SessionStore;
  mailer: Mailer;
  emailVerification: EmailVerificationService;
  recorder: ActivityRecorder;
}) {
  const { db, throttle } = deps;

  async function register(visitor: Anonymous, account: NewAccount) {
    const created = await deps.users.createAccount(visitor, account);
    await deps.emailVerification.sendLink(created.user);
    return created;
  }

  /**
   * Confirms that the signed-in person is the account's owner before a sensitive action: its
   * password (throttled like sign-in, so a stolen token cannot guess it), or for an account that
   * has none, a sign-in within the last 15 minutes (or the window given). The session's start is
   * the moment its token was issued, held server-side so it cannot be forged.
   */
  async function reauthenticate(
    actor: Actor,
    user: User,
    password: string | undefined,
    field: string,
    opts: { recentSignInMs?: number } = {},
  ) {
    const recentMs = opts.recentSignInMs ?? RECENT_SIGN_IN_MS;
    if (user.passwordHash) {
      if (!password) throw AppError.validation({ [field]: ['Required'] });
      // Counted per session, not per address: whoever holds a stolen token may change addresses
      // at will, but not sessions; and the owner's own sign-in stays unaffected.
      const source = `session:${actor.sessionId}`;
      await throttle.check(user.email, source);
      if (!(await verifyPassword(user.passwordHash, password))) {
        await throttle.fail(user.email, source);
        throw AppError.validation({ [field]: ['The password is incorrect'] });
      }
      await throttle.succeed(user.email, source);
      return;
    }
    const startedAt = await usersRepo.sessionStartedAt(db, actor.sessionId);
    if (!startedAt || Date.now() - startedAt.getTime() > recentMs) {
      const minutes = Math.round(recentMs / 60_000);
      throw new AppError('forbidden', `Sign in again to confirm this action (a sign-in within the last ${minutes} minutes is required)`);
    }
  }

  return {
    registerClient(visitor: Anonymous, body: RegisterClientBody) {
      return register(visitor, {
        role: 'client',
        email: body.email,
        password: body.password,
        firstName: body.first_name,
        lastName: body.last_name,
        phone: body.phone ?? null,
        lang: body.lang,
      });
    },

    /** A prestataire and its business profile, which waits in validation `pending` for an admin. */
    async registerPrestataire(visitor: Anonymous, body: RegisterPrestataireBody) {
      let place = { city: body.city ?? '', cityId: null as number | null, latitude: body.latitude ?? null, longitude: body.longitude ?? null };
      if (body.city_id !== undefined) {
        const city = await repo.findCity(db, body.city_id);
        if (!city) throw AppError.validation({ city_id: ['No city has this id'] });
        // Coordinates given with the address are more precise than the commune's centre.
        place = {
          city: city.name,
          cityId: city.id,
          latitude: place.latitude ?? city.latitude,
          longitude: place.longitude ?? city.longitude,
        };
      }
      return register(visitor, {
        role: 'prestataire',
        email: body.email,
        password: body.password,
        firstName: body.first_name,
        lastName: body.last_name,
        phone: body.phone ?? null,
        lang: body.lang,
        profile: { businessName: body.business_name, siret: body.siret, address: body.address, postalCode: body.postal_code, ...place },
      });
    },

    /**
     * Checks e-mail and password. Every failure looks the same and takes as long (an unknown e-mail
     * is checked against a decoy hash), so the answer never tells whether an account exists; the
     * account's state is told only to whoever proved the password.
     */
    async login(visitor: Anonymous, body: LoginBody, opts: { prestataireOnly: boolean }) {
      await throttle.check(body.email, visitor.ip);
      const user = await usersRepo.findUserByEmail(db, body.email);
      const ok = user?.passwordHash ? await verifyPassword(user.passwordHash, body.password) : await verifyAgainstDecoy(body.password);
      if (!user || !ok || user.deletedAt) {
        await throttle.fail(body.email, visitor.ip);
        throw new AppError('unauthenticated', BAD_CREDENTIALS);
      }
      await throttle.succeed(body.email, visitor.ip);
      if (user.status === 'banned') throw new AppError('forbidden', 'This account has been banned');
      if (user.status === 'suspended') throw new AppError('forbidden', 'This account is suspended; contact support');
      if (opts.prestataireOnly && user.role !== 'prestataire') {
        throw new AppError('forbidden', 'This sign-in is for prestataires; use the client sign-in');
      }
      await repo.touchLastLogin(db, user.id);
      const profile = user.role === 'prestataire' ? await usersRepo.findProfile(db, user.id) : undefined;
      return { user, profile: profile ?? null };
    },

    logout: (actor: Actor) => deps.sessions.revoke(actor.sessionId),

    reauthenticate,

    /**
     * Sets a new password and signs out every other session (a thief's included); the current
     * one stays. A social-only account sets its first password here.
     */
    async changePassword(actor: Actor, body: ChangePasswordBody) {
      const user = await usersRepo.findUserById(db, actor.userId);
      if (!user || user.deletedAt) throw new AppError('unauthenticated', 'The session has ended; sign in again');
      await reauthenticate(actor, user, body.current_password, 'current_password');
      if (user.passwordHash && body.password === body.current_password) {
        throw AppError.validation({ password: ['Must differ from the current password'] });
      }
      const nextHash = await hashPassword(body.password);
      await withTransaction(db, async (tx) => {
        if (!(await repo.replacePasswordHash(tx, user.id, user.passwordHash, nextHash))) {
          throw new AppError('conflict', 'The password was changed meanwhile; try again');
        }
        await repo.deletePasswordResetTokens(tx, user.id);
        await usersRepo.revokeUserSessions(tx, user.id, actor.sessionId);
        await deps.recorder.record(
          actor,
          'user.password_changed',
          userSubject(user.id),
          { before: { has_password: user.passwordHash !== null }, after: { has_password: true } },
          tx,
        );
      });
      deps.mailer.send(passwordChangedNotice, { email: user.email, lang: user.lang }, { firstName: user.firstName });
    },
  };
}

export type AuthService = ReturnType<typeof createAuthService>;
