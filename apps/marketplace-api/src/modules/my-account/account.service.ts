import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import type { FastifyBaseLogger } from 'fastify';
import type { DbTx } from '../../db/index.js';
import type { Lang, NewUser, User } from '../../db/schema/index.js';
import type { Mailer } from '../../integrations/mail/mailer.js';
import { newStorageKey, type Storage } from '../../integrations/storage/storage.js';
import type { Actor } from '../../lib/context.js';
import type { UploadedFile } from '../../lib/uploads.js';
import { type ActivityRecorder, userSubject } from '../activity-log/index.js';
import type { AuthService } from '../auth/index.js';
import type { EmailChangeService } from '../email-codes/index.js';
import { mediaUrl, type UsersService } from '../user-store/index.js';
import { userRecords as usersRepo } from '../user-store/index.js';
import * as repo from './account.repository.js';
import type { DeviceTokenBody } from './account.schemas.js';

export interface ProfileChanges {
  firstName?: string;
  lastName?: string;
  phone?: string | null;
  email?: string;
  lang?: Lang;
}

/** Fields applied at once, and their names in the activity log (the e-mail waits for confirmation). */
const FIELDS = [
  ['firstName', 'first_name'],
  ['lastName', 'last_name'],
  ['phone', 'phone'],
  ['lang', 'lang'],
] as const satisfies readonly (readonly [keyof ProfileChanges & keyof User, string])[];

/** An account without a password proves itself for an e-mail change by a sign-in this recent. */
export const EMAIL_CHANGE_RECENT_SIGN_IN_MS = 10 * 60_000;

function emailTaken(): AppError {
  return new AppError('conflict', 'An account with this e-mail already exists', {
    errors: { email: ['The email has already been taken'] },
  });
}

/** The signed-in user's own account: profile, photo, push devices, language, deletion. */
export function createAccountService(deps: {
  db: DbTx;
  users: UsersService;
  auth: AuthService;
  storage: Storage;
  mailer: Mailer;
  emailChange: EmailChangeService;
  recorder: ActivityRecorder;
  log: Pick<FastifyBaseLogger, 'warn'>;
}) {
  const { db, storage, recorder } = deps;

  /** A file no row points to any more; a failure leaves an orphan on disk, never a broken account. */
  async function discardFile(key: string) {
    try {
      await storage.remove(key);
    } catch (error) {
      deps.log.warn({ err: error, key }, 'stored file could not be removed');
    }
  }

  return {
    me(actor: Actor) {
      return deps.users.getWithProfile(actor.userId);
    },

    /**
     * Applies the given fields at once; the activity log records only those that really change.
     * A new e-mail is not applied: after the owner confirms it is them (password, or a recent
     * sign-in for an account without one), it becomes the pending address until the link sent to
     * it is followed, and the current address is told, with a link that undoes the change.
     * Asking for the current address again drops a pending change.
     */
    async update(actor: Actor, changes: ProfileChanges, opts: { currentPassword?: string } = {}) {
      const { email: requestedEmail, ...profileChanges } = changes;
      let newEmail: string | undefined;
      if (requestedEmail !== undefined) {
        const current = await usersRepo.findUserById(db, actor.userId);
        if (!current || current.deletedAt) throw new AppError('unauthenticated', 'The session has ended; sign in again');
        if (requestedEmail !== current.email) {
          if (opts.currentPassword === undefined && current.passwordHash) {
            throw AppError.validation({ current_password: ['Required to change the e-mail address'] });
          }
          await deps.auth.reauthenticate(actor, current, opts.currentPassword, 'current_password', {
            recentSignInMs: EMAIL_CHANGE_RECENT_SIGN_IN_MS,
          });
          if (await usersRepo.emailTakenByAnother(db, requestedEmail, current.id)) throw emailTaken();
          newEmail = requestedEmail;
        }
      }
      const { user, notify } = await withTransaction(db, async (tx) => {
        let current = await repo.lockUser(tx, actor.userId);
        if (!current) throw AppError.notFound('User');
        const set: Partial<NewUser> = {};
        const before: Record<string, unknown> = {};
        const after: Record<string, unknown> = {};
        for (const [key, field] of FIELDS) {
          const value = profileChanges[key];
          if (value === undefined || value === current[key]) continue;
          Object.assign(set, { [key]: value });
          before[field] = current[key];
          after[field] = value;
        }
        if (Object.keys(set).length > 0) {
          current = (await usersRepo.updateUser(tx, current.id, set)) ?? current;
          await recorder.record(actor, 'user.profile_updated', userSubject(current.id), { before, after }, tx);
        }
        if (newEmail !== undefined) {
          const requested = await deps.emailChange.request(actor, current, newEmail, tx);
          return { user: requested.user, notify: requested.notify };
        }
        if (requestedEmail === current.email && current.pendingEmail !== null) {
          return { user: await deps.emailChange.cancel(actor, current, tx), notify: undefined };
        }
        return { user: current, notify: undefined };
      });
      notify?.();
      return { ...(await deps.users.getWithProfile(user.id)), emailChangePending: newEmail !== undefined };
    },

    /** Stores the new photo, points the account at it, then removes the one it replaces. */
    async setPhoto(actor: Actor, file: UploadedFile) {
      const key = newStorageKey('public/avatars', file.extension);
      await storage.put(key, file.buffer);
      let replaced: string | null;
      try {
        replaced = await withTransaction(db, async (tx) => {
          const current = await repo.lockUser(tx, actor.userId);
          if (!current) throw AppError.notFound('User');
          await usersRepo.updateUser(tx, current.id, { photoKey: key });
          await recorder.record(
            actor,
            'user.profile_updated',
            userSubject(current.id),
            { before: { photo_url: mediaUrl(current.photoKey) }, after: { photo_url: mediaUrl(key) } },
            tx,
          );
          return current.photoKey;
        });
      } catch (error) {
        await discardFile(key);
        throw error;
      }
      if (replaced) await discardFile(replaced);
      return deps.users.getWithProfile(actor.userId);
    },

    /** Registers a push target for the signed-in user; `created` is false when it was already known. */
    async registerDevice(actor: Actor, body: DeviceTokenBody) {
      const target =
        body.kind === 'webpush'
          ? { token: body.subscription.endpoint, keys: body.subscription.keys }
          : { token: body.token, keys: null };
      const { created, ...device } = await repo.upsertDevice(db, {
        userId: actor.userId,
        kind: body.kind,
        ...target,
        platform: body.platform ?? null,
      });
      return { device, created };
    },

    /**
     * Deletes the account by anonymising it, once the owner has confirmed (password, or a recent
     * sign-in for an account without one). The last active administrator cannot leave the
     * platform without one.
     */
    async deleteAccount(actor: Actor, password: string | undefined) {
      const user = await usersRepo.findUserById(db, actor.userId);
      if (!user || user.deletedAt) throw new AppError('unauthenticated', 'The session has ended; sign in again');
      await deps.auth.reauthenticate(actor, user, password, 'password');
      const photoKey = await withTransaction(db, async (tx) => {
        if (user.role === 'admin') {
          const admins = await repo.lockActiveAdminIds(tx);
          if (!admins.some((id) => id !== user.id)) {
            throw new AppError('conflict', 'You are the last administrator; appoint another one before deleting your account');
          }
        }
        const current = await repo.lockUser(tx, user.id);
        if (!current) throw AppError.notFound('User');
        // The same operation as the shared service, inside this transaction so the check above holds.
        await deps.users.anonymise(actor, user.id, tx);
        return current.photoKey;
      });
      // The photo is personal data and its URL is public: it goes with the account.
      if (photoKey) await discardFile(photoKey);
    },
  };
}

export type AccountService = ReturnType<typeof createAccountService>;
