import { generateLinkToken, hashToken } from '@repo/auth';
import { withTransaction } from '@repo/db';
import { AppError, pageMeta, pageOffset } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { NewUser, User, UserStatus } from '../../db/schema/index.js';
import type { Mailer } from '../../integrations/mail/mailer.js';
import type { Actor, SystemActor } from '../../lib/context.js';
import { isUniqueViolation } from '../../lib/db-errors.js';
import { type ActivityLogService, type ActivityRecorder, userSubject } from '../activity-log/index.js';
import type { EmailVerificationService } from '../email-codes/index.js';
import type { UsersService } from '../user-store/index.js';
import { ensureActiveAdminRemains, ensureNotSelf } from './admins.service.js';
import { userRecords as usersRepo, tokenRecords as tokens } from '../user-store/index.js';
import { accountInvitation, accountStatusChanged, accountWarning } from './admin-users.mail.js';
import * as repo from './admin-users.repository.js';
import type { CreateUserBody, ListUsersQuery, SendWarningBody, UpdateUserBody } from './admin-users.schemas.js';

/** An invitation is read days later, unlike a reset link asked for a minute ago. */
export const INVITATION_TTL_DAYS = 7;
/** How many history entries an account's admin page shows. */
const RECENT_ACTIVITY = 20;

function emailTaken(): AppError {
  return new AppError('conflict', 'An account with this e-mail already exists', {
    errors: { email: ['The email has already been taken'] },
  });
}

/**
 * The back office's management of accounts. Account changes go through the users service within
 * the transaction opened here, so that the admin-row lock, the change, its tokens and its activity
 * entries commit or roll back together; e-mails leave only after the commit.
 */
export function createAdminUsersService(deps: {
  db: DbTx;
  mailer: Mailer;
  appUrl: string;
  sessionTtlDays: number;
  users: UsersService;
  /** The app's one instance, so its per-address send limit counts the links sent from here too. */
  emailVerification: Pick<EmailVerificationService, 'sendLink'>;
  activityLog: ActivityLogService;
  recorder: ActivityRecorder;
}) {
  const { db, mailer, users, emailVerification, recorder } = deps;

  async function withProfile(user: User) {
    const profile = user.role === 'prestataire' ? await usersRepo.findProfile(db, user.id) : undefined;
    return { user, profile: profile ?? null };
  }

  async function findLive(tx: DbTx, userId: number) {
    const user = await usersRepo.findUserById(tx, userId);
    if (!user || user.deletedAt) throw AppError.notFound('User');
    return user;
  }

  return {
    async list(query: ListUsersQuery) {
      const { rows, total } = await repo.listUsers(
        db,
        {
          role: query.role,
          status: query.status,
          q: query.q,
          emailVerified: query.email_verified,
          createdFrom: query.created_from,
          createdTo: query.created_to,
          includeDeleted: query.include_deleted,
        },
        query.sort,
        query.per_page,
        pageOffset(query.page, query.per_page),
      );
      return { rows, meta: pageMeta(query.page, query.per_page, total) };
    },

    /** Any account, deleted ones included, with its session and device counts and its latest history. */
    async get(userId: number) {
      const row = await repo.findUser(db, userId);
      if (!row) throw AppError.notFound('User');
      const counts = await repo.accountCounts(db, userId, deps.sessionTtlDays);
      const activity = await deps.activityLog.latestAbout('user', userId, RECENT_ACTIVITY);
      return { ...row, counts, activity };
    },

    /**
     * Creates a client or prestataire account. Without a password the account cannot sign in until
     * its owner follows the e-mailed link, which sets one through the password-reset route.
     */
    async create(actor: Actor, body: CreateUserBody) {
      const invitation = body.password === undefined ? generateLinkToken() : null;
      const created = await withTransaction(db, async (tx) => {
        const account = await users.createAccount(
          actor,
          {
            role: body.role,
            email: body.email,
            password: body.password ?? null,
            firstName: body.first_name,
            lastName: body.last_name,
            phone: body.phone ?? null,
            lang: body.lang,
            emailVerified: body.email_verified,
            profile:
              body.role === 'prestataire'
                ? {
                    businessName: body.business_name!,
                    siret: body.siret!,
                    address: body.address!,
                    postalCode: body.postal_code!,
                    city: body.city!,
                    latitude: body.latitude ?? null,
                    longitude: body.longitude ?? null,
                  }
                : undefined,
          },
          tx,
        );
        if (invitation) {
          await tokens.issueToken(tx, {
            userId: account.user.id,
            purpose: 'password_reset_link',
            tokenHash: hashToken(invitation),
            ttlMinutes: INVITATION_TTL_DAYS * 24 * 60,
          });
        }
        return account;
      });
      if (invitation) {
        const url = `${deps.appUrl}/reset-password?token=${encodeURIComponent(invitation)}`;
        mailer.send(
          accountInvitation,
          { email: created.user.email, lang: created.user.lang },
          { firstName: created.user.firstName, url, validDays: INVITATION_TTL_DAYS },
        );
      }
      return created;
    },

    /**
     * Changes the given fields of a live account and logs the changed ones. A new e-mail address is
     * unverified unless the administrator vouches for it, and links sent to the old one stop working.
     */
    async update(actor: Actor, userId: number, body: UpdateUserBody) {
      let outcome: { user: User; emailChanged: boolean };
      try {
        outcome = await withTransaction(db, async (tx) => {
          const current = await repo.lockLiveUser(tx, userId);
          if (!current) throw AppError.notFound('User');
          const changes: Partial<NewUser> = {};
          const before: Record<string, unknown> = {};
          const after: Record<string, unknown> = {};
          const change = <K extends keyof NewUser>(field: string, key: K, from: NewUser[K], to: NewUser[K] | undefined) => {
            if (to === undefined || to === from) return;
            changes[key] = to;
            before[field] = from;
            after[field] = to;
          };
          change('first_name', 'firstName', current.firstName, body.first_name);
          change('last_name', 'lastName', current.lastName, body.last_name);
          change('phone', 'phone', current.phone, body.phone);
          change('lang', 'lang', current.lang, body.lang);
          change('email', 'email', current.email, body.email);
          const emailChanged = changes.email !== undefined;
          if (emailChanged && (await repo.emailTakenByOther(tx, body.email!, userId))) throw emailTaken();

          const wasVerified = current.emailVerifiedAt !== null;
          const verified = body.email_verified ?? (emailChanged ? false : wasVerified);
          if (verified !== wasVerified || (verified && emailChanged)) {
            changes.emailVerifiedAt = verified ? new Date() : null;
            if (verified !== wasVerified) {
              before.email_verified = wasVerified;
              after.email_verified = verified;
            }
          }
          if (Object.keys(changes).length === 0) return { user: current, emailChanged: false };

          const user = await usersRepo.updateUser(tx, userId, changes);
          if (!user) throw AppError.notFound('User');
          if (emailChanged) await repo.deleteUserTokens(tx, userId);
          await recorder.record(actor, 'user.updated', userSubject(userId), { before, after }, tx);
          return { user, emailChanged };
        });
      } catch (error) {
        // Another account took the address between the check and the update.
        if (isUniqueViolation(error)) throw emailTaken();
        throw error;
      }
      if (outcome.emailChanged) await emailVerification.sendLink(outcome.user);
      return withProfile(outcome.user);
    },

    /**
     * Activates, suspends or bans an account and tells its owner why. Leaving `active` ends the
     * account's sessions at once. An administrator cannot change their own status, and the last
     * active administrator cannot be suspended or banned.
     */
    async setStatus(actor: Actor | SystemActor, userId: number, status: UserStatus, reason: string | null) {
      ensureNotSelf(actor, userId, 'You cannot change your own status');
      const { user, statusChanged } = await withTransaction(db, async (tx) => {
        const target = await findLive(tx, userId);
        // A repeated request (a double click) changes nothing and tells nobody twice.
        if (target.status === status && target.statusReason === reason) return { user: target, statusChanged: false };
        if (target.role === 'admin' && status !== 'active') await ensureActiveAdminRemains(tx, actor, userId);
        const updated = await users.setStatus(actor, userId, status, reason, tx);
        return { user: updated, statusChanged: target.status !== status };
      });
      if (statusChanged) {
        mailer.send(accountStatusChanged, { email: user.email, lang: user.lang }, { firstName: user.firstName, status, reason });
      }
      return withProfile(user);
    },

    /** Deletes an account by anonymising it; never one's own, never the last active administrator. */
    async remove(actor: Actor | SystemActor, userId: number) {
      ensureNotSelf(actor, userId, 'You cannot delete your own account from the back office');
      await withTransaction(db, async (tx) => {
        const target = await findLive(tx, userId);
        if (target.role === 'admin') await ensureActiveAdminRemains(tx, actor, userId);
        await users.anonymise(actor, userId, tx);
      });
    },

    /** E-mails the administrator's warning to the user and leaves it in their notifications. */
    async warn(actor: Actor, userId: number, body: SendWarningBody) {
      const { user, notification } = await withTransaction(db, async (tx) => {
        const target = await findLive(tx, userId);
        const row = await repo.insertNotification(tx, {
          userId,
          type: 'warning',
          title: body.subject,
          body: body.message,
        });
        await recorder.record(
          actor,
          'user.warned',
          userSubject(userId),
          { after: { subject: body.subject, message: body.message, notification_id: row.id } },
          tx,
        );
        return { user: target, notification: row };
      });
      mailer.send(accountWarning, { email: user.email, lang: user.lang }, { firstName: user.firstName, subject: body.subject, message: body.message });
      return notification;
    },
  };
}

export type AdminUsersService = ReturnType<typeof createAdminUsersService>;
