import { hashPassword } from '@repo/auth';
import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import { and, eq, isNull, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import {
  deviceTokens,
  favourites,
  prestataireProfiles,
  userTokens,
  users,
  type Lang,
  type Role,
  type User,
  type UserStatus,
} from '../../db/schema/index.js';
import type { RequestContext } from '../../lib/context.js';
import { recordActivity } from '../activity-log/activity-log.repository.js';
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

/** Account operations shared by sign-up, social sign-in, admin user management and deletion. */
export function createUsersService(deps: { db: DbTx }) {
  const { db } = deps;

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
    async createAccount(ctx: RequestContext, input: NewAccount) {
      if (input.role === 'prestataire' && !input.profile) throw new Error('A prestataire account needs a profile');
      const passwordHash = input.password === null ? null : await hashPassword(input.password);
      return withTransaction(db, async (tx) => {
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
          const [row] = await tx
            .insert(prestataireProfiles)
            .values({ userId: user.id, ...input.profile })
            .onConflictDoNothing({ target: prestataireProfiles.siret })
            .returning();
          if (!row) {
            throw new AppError('conflict', 'A business with this SIRET is already registered', {
              errors: { siret: ['The siret has already been taken'] },
            });
          }
          profile = row;
        }
        await recordActivity(tx, ctx, { action: 'user.created', subjectType: 'user', subjectId: user.id, after: auditUser(user) });
        return { user, profile };
      });
    },

    /**
     * Changes an account's status; leaving `active` revokes every session at once (the session
     * check also refuses non-active users, so a racing request cannot slip through).
     */
    async setStatus(ctx: RequestContext, userId: number, status: UserStatus, reason: string | null) {
      return withTransaction(db, async (tx) => {
        const [before] = await tx
          .select({ status: users.status })
          .from(users)
          .where(and(eq(users.id, userId), isNull(users.deletedAt)))
          .for('update');
        if (!before) throw AppError.notFound('User');
        const user = await repo.updateUser(tx, userId, { status, statusReason: reason });
        if (!user) throw AppError.notFound('User');
        if (status !== 'active') await repo.revokeUserSessions(tx, userId);
        await recordActivity(tx, ctx, {
          action: 'user.status_changed',
          subjectType: 'user',
          subjectId: userId,
          before: { status: before.status },
          after: { status, reason },
        });
        return user;
      });
    },

    /**
     * Deletes an account by anonymising it: personal data is cleared, sessions, devices and codes
     * go, and the row stays so that requests, payments and conversations keep their counterpart.
     */
    async anonymise(ctx: RequestContext, userId: number) {
      return withTransaction(db, async (tx) => {
        const [user] = await tx.select().from(users).where(eq(users.id, userId)).for('update');
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
        await tx.delete(deviceTokens).where(eq(deviceTokens.userId, userId));
        await tx.delete(userTokens).where(eq(userTokens.userId, userId));
        await tx.delete(favourites).where(eq(favourites.clientId, userId));
        if (user.role === 'prestataire') {
          await tx
            .update(prestataireProfiles)
            .set({ publicPhone: null, updatedAt: sql`now()` })
            .where(eq(prestataireProfiles.userId, userId));
        }
        await recordActivity(tx, ctx, { action: 'user.deleted', subjectType: 'user', subjectId: userId, before: auditUser(user) });
        return updated!;
      });
    },

    /** Creates the configured first administrator unless an account has that e-mail (idempotent). */
    async ensureBootstrapAdmin(ctx: RequestContext, admin: { email: string; password: string }) {
      const existing = await repo.findUserByEmail(db, admin.email);
      if (existing) return { created: false, user: existing };
      try {
        const { user } = await this.createAccount(ctx, {
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
