import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import type { FastifyBaseLogger } from 'fastify';
import type { DbTx } from '../../db/index.js';
import type { User } from '../../db/schema/index.js';
import {
  IdentityProviderUnavailableError,
  InvalidIdentityTokenError,
  PROVIDER_NAMES,
  type IdentityClaims,
  type IdentityProvider,
  type IdentityVerifiers,
} from '../../integrations/identity/identity.js';
import type { Anonymous } from '../../lib/context.js';
import { isUniqueViolation } from '../../lib/db-errors.js';
import { type ActivityRecorder, userSubject } from '../activity-log/index.js';
import { userRecords, type UsersService } from '../user-store/index.js';
import * as repo from './social-auth.repository.js';
import type { SocialSignInBody } from './social-auth.schemas.js';

function ensureActive(user: User) {
  if (user.status === 'suspended') throw new AppError('forbidden', 'This account is suspended');
  if (user.status === 'banned') throw new AppError('forbidden', 'This account is banned');
}

/** A concurrent sign-in changed the account between the lookup and the write. */
class ConcurrentChange extends Error {}

const subjectOf = (user: User, provider: IdentityProvider) => (provider === 'google' ? user.googleSubject : user.appleSubject);

export function createSocialAuthService(deps: {
  db: DbTx;
  users: UsersService;
  verifiers: IdentityVerifiers;
  recorder: ActivityRecorder;
  log: Pick<FastifyBaseLogger, 'info'>;
}) {
  const { db } = deps;

  async function verify(provider: IdentityProvider, body: SocialSignInBody): Promise<IdentityClaims> {
    const verifier = deps.verifiers[provider];
    if (!verifier.enabled) throw new AppError('service_unavailable', `${PROVIDER_NAMES[provider]} sign-in is not configured`);
    try {
      return await verifier.verify(body.id_token, { nonce: body.nonce });
    } catch (error) {
      if (error instanceof IdentityProviderUnavailableError) {
        throw new AppError('service_unavailable', `${PROVIDER_NAMES[provider]} sign-in is unavailable; try again later`, { cause: error });
      }
      if (error instanceof InvalidIdentityTokenError) {
        // The caller gets one message whatever failed; the reason stays in the log for whoever
        // configures the client ids.
        deps.log.info({ provider, reason: error.message }, 'identity token refused');
        throw new AppError('unauthenticated', 'The identity token is invalid or has expired');
      }
      throw error;
    }
  }

  /**
   * Attaches the identity to the account holding the same e-mail. When that account's e-mail was
   * never verified, whoever set its password did not prove owning the address (it may be someone
   * who registered it first to wait for the owner): the password goes and its sessions end, and the
   * provider, which did verify the address, becomes the way in.
   */
  async function link(visitor: Anonymous, userId: number, claims: IdentityClaims) {
    return withTransaction(db, async (tx) => {
      const current = await repo.lockUser(tx, userId);
      if (!current || current.deletedAt) throw new ConcurrentChange();
      ensureActive(current);
      const linkedSubject = subjectOf(current, claims.provider);
      if (linkedSubject && linkedSubject !== claims.subject) {
        throw new AppError('conflict', `This account is already linked to another ${PROVIDER_NAMES[claims.provider]} account`);
      }
      const dropPassword = current.emailVerifiedAt === null && current.passwordHash !== null;
      const user = await repo.linkSubject(tx, userId, claims.provider, claims.subject, { dropPassword });
      if (!user) throw new ConcurrentChange();
      if (dropPassword) await userRecords.revokeUserSessions(tx, userId);
      await deps.recorder.record(
        visitor,
        'user.social_linked',
        userSubject(userId),
        {
          before: { email_verified: current.emailVerifiedAt !== null, has_password: current.passwordHash !== null },
          after: { provider: claims.provider, email: claims.email, email_verified: true, has_password: user.passwordHash !== null },
        },
        tx,
      );
      return user;
    });
  }

  async function resolve(visitor: Anonymous, claims: IdentityClaims, body: SocialSignInBody) {
    const known = await repo.findUserBySubject(db, claims.provider, claims.subject);
    if (known) {
      ensureActive(known);
      await repo.touchLastLogin(db, known.id);
      return { user: known, created: false };
    }
    const sameEmail = await userRecords.findUserByEmail(db, claims.email);
    if (sameEmail && !sameEmail.deletedAt) {
      ensureActive(sameEmail);
      return { user: await link(visitor, sameEmail.id, claims), created: false };
    }
    const { user } = await deps.users.createAccount(visitor, {
      role: 'client',
      email: claims.email,
      password: null,
      firstName: body.first_name || claims.givenName || '',
      lastName: body.last_name || claims.familyName || '',
      emailVerified: true,
      ...(claims.provider === 'google' ? { googleSubject: claims.subject } : { appleSubject: claims.subject }),
    });
    await repo.touchLastLogin(db, user.id);
    return { user, created: true };
  }

  return {
    /**
     * Signs in with a provider's ID token: the account of that identity, else the account of that
     * verified e-mail (linked now), else a new client account.
     */
    async signIn(visitor: Anonymous, provider: IdentityProvider, body: SocialSignInBody) {
      const claims = await verify(provider, body);
      let outcome: { user: User; created: boolean };
      try {
        outcome = await resolve(visitor, claims, body);
      } catch (error) {
        // Two first sign-ins of one person race: the loser's insert or link hits the unique e-mail
        // or subject, or finds the row changed; looking again finds what the winner made.
        const emailTaken = error instanceof AppError && error.code === 'conflict' && error.errors?.email !== undefined;
        if (!(error instanceof ConcurrentChange) && !isUniqueViolation(error) && !emailTaken) throw error;
        try {
          outcome = await resolve(visitor, claims, body);
        } catch (again) {
          if (again instanceof ConcurrentChange) throw new AppError('conflict', 'The account changed during sign-in; try again');
          throw again;
        }
      }
      const { user, profile } = await deps.users.getWithProfile(outcome.user.id);
      return { user, profile, created: outcome.created };
    },
  };
}

export type SocialAuthService = ReturnType<typeof createSocialAuthService>;
