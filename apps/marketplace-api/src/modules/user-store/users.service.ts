import { hashPassword } from '@repo/auth';
import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { Lang, Role, User, UserStatus, users } from '../../db/schema/index.js';
import type { Actor, Caller, SystemActor } from '../../lib/context.js';
import { transition, type Move } from '../../lib/transitions.js';
import { type ActivityRecorder, userSubject } from '../activity-log/index.js';
import type { Outbox } from '../outbox/index.js';
import * as repo from './users.repository.js';
import { presentUser } from './users.schemas.js';

export interface NewAccount {
  role: Role;
  email: string;
  /** Null for accounts made by social sign-in. */
  password: string | null;
  firstName: string;
  lastName: string;
  phone?: string | null;
  lang?: Lang;
  emailVerified?: boolean;
  googleSubject?: string;
  appleSubject?: string;
  /** Required for prestataires; starts in validation `pending`. */
  profile?: {
    businessName: string;
    siret: string;
    address: string;
    postalCode: string;
    city: string;
    cityId?: number | null;
    latitude?: number | null;
    longitude?: number | null;
    description?: string | null;
    hourlyRateCents?: number | null;
  };
}

function emailTaken(): AppError {
  return new AppError('conflict', 'An account with this e-mail already exists', {
    errors: { email: ['The email has already been taken'] },
  });
}

/** Snapshot of an account for the activity log (never the password hash). */
export function auditUser(user: User): Record<string, unknown> {
  return { email: user.email, role: user.role, status: user.status, first_name: user.firstName, last_name: user.lastName };
}

/**
 * The move to each status. An account comes back to `active` from a suspension or a ban; it can be
 * suspended or banned from any status, its own included (the reason changes; a ban eased to a
 * suspension). An active account staying active has no move: there is nothing to change.
 */
const STATUS_MOVES: Record<UserStatus, Omit<Move<typeof users, UserStatus>, 'set' | 'details'>> = {
  active: { verb: 'reactivate', from: ['suspended', 'banned'], to: 'active', action: 'user.status_changed' },
  suspended: { verb: 'suspend', from: ['active', 'suspended', 'banned'], to: 'suspended', action: 'user.status_changed' },
  banned: { verb: 'ban', from: ['active', 'suspended', 'banned'], to: 'banned', action: 'user.status_changed' },
};

/**
 * Account operations shared by sign-up, social sign-in, admin user management and deletion. Built
 * once; the writes take the caller's transaction as their last argument, so that an admin's checks
 * and the change they guard commit together.
 */
export function createUsersService(deps: { db: DbTx; recorder: ActivityRecorder; outbox: Outbox }) {
  const { db, recorder, outbox } = deps;

  return {
    present: presentUser,

    async findById(id: number) {
      return repo.findUserById(db, id);
    },

    /** The user and, for a prestataire, its profile; 404 when there is no such live account. */
    async getWithProfile(id: number) {
      const user = await repo.findUserById(db, id);
      if (!user || user.deletedAt) throw AppError.notFound('User');
      const profile = user.role === 'prestataire' ? await repo.findProfile(db, id) : undefined;
      return { user, profile: profile ?? null };
    },

    /** Creates an account (and a prestataire's profile) in one transaction; 409 on a taken e-mail or SIRET. */
    async createAccount(caller: Caller, input: NewAccount, tx?: DbTx) {
      if (input.role === 'prestataire' && !input.profile) throw new Error('A prestataire account needs a profile');
      const passwordHash = input.password === null ? null : await hashPassword(input.password);
      return withTransaction(tx ?? db, async (tx) => {
        const user = await repo.insertUser(tx, {
          role: input.role,
          email: input.email,
          passwordHash,
          firstName: input.firstName,
          lastName: input.lastName,
          phone: input.phone ?? null,
          lang: input.lang ?? 'fr',
          emailVerifiedAt: input.emailVerified ? new Date() : null,
          googleSubject: input.googleSubject ?? null,
          appleSubject: input.appleSubject ?? null,
        });
        if (!user) throw emailTaken();
        let profile = null;
        if (input.profile) {
          const row = await repo.insertProfile(tx, { userId: user.id, ...input.profile });
          if (!row) {
            throw new AppError('conflict', 'A business with this SIRET is already registered', {
              errors: { siret: ['The siret has already been taken'] },
            });
          }
          profile = row;
        }
        await recorder.record(caller, 'user.created', userSubject(user.id), { after: auditUser(user) }, tx);
        return { user, profile };
      });
    },

    /**
     * Changes an account's status through its state machine (the row locked, the move checked and
     * made, logged and published in one transaction: 409 with `current_status` for a move the status
     * does not allow). Leaving `active` revokes every session at once (the session check also refuses
     * non-active users, so a racing request cannot slip through).
     */
    async setStatus(actor: Actor | SystemActor, userId: number, status: UserStatus, reason: string | null, tx?: DbTx) {
      return withTransaction(tx ?? db, async (tx) => {
        const { row: user } = await transition(tx, { recorder, outbox, actor }, repo.userStatusMachine, userId, {
          ...STATUS_MOVES[status],
          set: () => ({ statusReason: reason }),
        });
        if (status !== 'active') await repo.revokeUserSessions(tx, userId);
        return user;
      });
    },

    /**
     * Deletes an account by anonymising it: personal data is cleared, sessions, devices and codes
     * go, and the row stays so that requests, payments and conversations keep their counterpart.
     */
    async anonymise(actor: Actor | SystemActor, userId: number, tx?: DbTx) {
      return withTransaction(tx ?? db, async (tx) => {
        const user = await repo.lockUser(tx, userId);
        if (!user || user.deletedAt) throw AppError.notFound('User');
        const updated = await repo.updateUser(tx, userId, {
          email: `deleted-${userId}@deleted.invalid`,
          pendingEmail: null,
          passwordHash: null,
          firstName: 'Deleted',
          lastName: 'user',
          phone: null,
          photoKey: null,
          googleSubject: null,
          appleSubject: null,
          deletedAt: new Date(),
        });
        await repo.revokeUserSessions(tx, userId);
        await repo.deletePersonalRows(tx, userId);
        if (user.role === 'prestataire') await repo.clearPublicPhone(tx, userId);
        await recorder.record(actor, 'user.deleted', userSubject(userId), { before: auditUser(user) }, tx);
        return updated!;
      });
    },

    /** Creates the configured first administrator unless an account has that e-mail (idempotent). */
    async ensureBootstrapAdmin(system: SystemActor, admin: { email: string; password: string }) {
      const existing = await repo.findUserByEmail(db, admin.email);
      if (existing) return { created: false, user: existing };
      try {
        const { user } = await this.createAccount(system, {
          role: 'admin',
          email: admin.email,
          password: admin.password,
          firstName: 'Admin',
          lastName: 'Bootstrap',
          emailVerified: true,
        });
        return { created: true, user };
      } catch (error) {
        // Another instance starting at the same time made it first.
        if (error instanceof AppError && error.code === 'conflict') return { created: false, user: await repo.findUserByEmail(db, admin.email) };
        throw error;
      }
    },
  };
}

export type UsersService = ReturnType<typeof createUsersService>;
