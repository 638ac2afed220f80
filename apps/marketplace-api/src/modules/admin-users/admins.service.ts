import { withTransaction } from '@repo/db';
import { AppError, pageMeta, pageOffset } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { Actor, SystemActor } from '../../lib/context.js';
import { type ActivityRecorder, userSubject } from '../activity-log/index.js';
import { auditUser, type UsersService } from '../user-store/index.js';
import * as repo from './admins.repository.js';
import type { CreateAdminBody } from './admins.schemas.js';

/**
 * Refuses to suspend, ban or delete `targetId` when no other active administrator would remain.
 * The admin rows are locked first, so two administrators acting on each other at the same moment
 * are serialised and the second sees what the first did.
 */
export async function ensureActiveAdminRemains(tx: DbTx, actor: Actor | SystemActor, targetId: number) {
  const admins = await repo.lockLiveAdmins(tx);
  const others = admins.filter((a) => a.id !== targetId && a.status === 'active');
  if (others.length === 0) throw new AppError('conflict', 'The last active administrator cannot be suspended, banned or deleted');
  // The caller may have been suspended or deleted by a request that committed while this one waited for the lock.
  if (actor.kind === 'user' && !others.some((a) => a.id === actor.userId)) {
    throw new AppError('conflict', 'Your administrator account is no longer active');
  }
}

/** Refuses an administrator's action on their own account (they would lock themselves out). */
export function ensureNotSelf(actor: Actor | SystemActor, userId: number, message: string) {
  if (actor.kind === 'user' && actor.userId === userId) throw new AppError('conflict', message);
}

export function createAdminsService(deps: { db: DbTx; users: UsersService; recorder: ActivityRecorder }) {
  const { db, users, recorder } = deps;
  return {
    async list(page: number, perPage: number) {
      const { rows, total } = await repo.listAdmins(db, perPage, pageOffset(page, perPage));
      return { rows, meta: pageMeta(page, perPage, total) };
    },

    /** An administrator account with the password given; 409 when the e-mail is taken. */
    create(actor: Actor, body: CreateAdminBody) {
      // One transaction, so that the account and its log entries commit together.
      return withTransaction(db, async (tx) => {
        const { user } = await users.createAccount(
          actor,
          {
            role: 'admin',
            email: body.email,
            password: body.password,
            firstName: body.first_name,
            lastName: body.last_name,
            phone: body.phone ?? null,
            lang: body.lang,
            emailVerified: body.email_verified,
          },
          tx,
        );
        await recorder.record(actor, 'admin.created', userSubject(user.id), { after: auditUser(user) }, tx);
        return user;
      });
    },

    /** Deletes (anonymises) an administrator account; never oneself, never the last active one. */
    async remove(actor: Actor | SystemActor, userId: number) {
      ensureNotSelf(actor, userId, 'You cannot delete your own administrator account');
      await withTransaction(db, async (tx) => {
        const admin = await repo.findLiveAdmin(tx, userId);
        if (!admin) throw AppError.notFound('Administrator');
        await ensureActiveAdminRemains(tx, actor, userId);
        await users.anonymise(actor, userId, tx);
        await recorder.record(actor, 'admin.deleted', userSubject(userId), { before: auditUser(admin) }, tx);
      });
    },
  };
}

export type AdminsService = ReturnType<typeof createAdminsService>;
