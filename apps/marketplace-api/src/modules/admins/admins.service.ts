import { withTransaction } from '@repo/db';
import { AppError, pageMeta, pageOffset } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { RequestContext } from '../../lib/context.js';
import { recordActivity } from '../activity-log/activity-log.repository.js';
import { auditUser, createUsersService } from '../users/users.service.js';
import * as repo from './admins.repository.js';
import type { CreateAdminBody } from './admins.schemas.js';

/**
 * Refuses to suspend, ban or delete `targetId` when no other active administrator would remain.
 * The admin rows are locked first, so two administrators acting on each other at the same moment
 * are serialised and the second sees what the first did.
 */
export async function ensureActiveAdminRemains(tx: DbTx, ctx: RequestContext, targetId: number) {
  const admins = await repo.lockLiveAdmins(tx);
  const others = admins.filter((a) => a.id !== targetId && a.status === 'active');
  if (others.length === 0) throw new AppError('conflict', 'The last active administrator cannot be suspended, banned or deleted');
  // The caller may have been suspended or deleted by a request that committed while this one waited for the lock.
  const actorId = ctx.actor?.userId;
  if (actorId !== undefined && !others.some((a) => a.id === actorId)) {
    throw new AppError('conflict', 'Your administrator account is no longer active');
  }
}

/** Refuses an administrator's action on their own account (they would lock themselves out). */
export function ensureNotSelf(ctx: RequestContext, userId: number, message: string) {
  if (ctx.actor?.userId === userId) throw new AppError('conflict', message);
}

export function createAdminsService(deps: { db: DbTx }) {
  const { db } = deps;
  return {
    async list(page: number, perPage: number) {
      const { rows, total } = await repo.listAdmins(db, perPage, pageOffset(page, perPage));
      return { rows, meta: pageMeta(page, perPage, total) };
    },

    /** An administrator account with the password given; 409 when the e-mail is taken. */
    create(ctx: RequestContext, body: CreateAdminBody) {
      return withTransaction(db, async (tx) => {
        // Bound to this transaction so that the account and its log entries commit together.
        const { user } = await createUsersService({ db: tx }).createAccount(ctx, {
          role: 'admin',
          email: body.email,
          password: body.password,
          firstName: body.first_name,
          lastName: body.last_name,
          phone: body.phone ?? null,
          lang: body.lang,
          emailVerified: body.email_verified,
        });
        await recordActivity(tx, ctx, { action: 'admin.created', subjectType: 'user', subjectId: user.id, after: auditUser(user) });
        return user;
      });
    },

    /** Deletes (anonymises) an administrator account; never oneself, never the last active one. */
    async remove(ctx: RequestContext, userId: number) {
      ensureNotSelf(ctx, userId, 'You cannot delete your own administrator account');
      await withTransaction(db, async (tx) => {
        const admin = await repo.findLiveAdmin(tx, userId);
        if (!admin) throw AppError.notFound('Administrator');
        await ensureActiveAdminRemains(tx, ctx, userId);
        await createUsersService({ db: tx }).anonymise(ctx, userId);
        await recordActivity(tx, ctx, { action: 'admin.deleted', subjectType: 'user', subjectId: userId, before: auditUser(admin) });
      });
    },
  };
}

export type AdminsService = ReturnType<typeof createAdminsService>;
