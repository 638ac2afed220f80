import { generateLinkToken, hashToken } from '@repo/auth';
import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import { TOKEN_PURPOSES, type User } from '../../db/schema/index.js';
import type { Mailer } from '../../integrations/mail/mailer.js';
import type { Actor, Anonymous } from '../../lib/context.js';
import { isUniqueViolation } from '../../lib/db-errors.js';
import { type ActivityRecorder, userSubject } from '../activity-log/index.js';
import { invalidLink } from './one-time-codes.js';
import { RESET_LINK_TTL_MINUTES } from './password-reset.service.js';
import { userRecords as usersRepo, tokenRecords as tokens } from '../user-store/index.js';
import { emailChangeConfirmLink, emailChangeRequestedNotice, emailChangeRevertedNotice } from './email-change.mail.js';
import * as repo from './email-change.repository.js';

/** The link to the new address is valid 24 hours, like a verification link (DESIGN.md §5). */
export const CONFIRM_TTL_MINUTES = 24 * 60;
/** The undo link to the former address outlives the confirmation: a week to notice the mail. */
export const UNDO_TTL_MINUTES = 7 * 24 * 60;

function addressTaken(): AppError {
  return new AppError('conflict', 'An account with this e-mail already exists', {
    errors: { email: ['The email has already been taken'] },
  });
}

/**
 * Changing an account's e-mail. The change waits until a link sent to the new address is followed,
 * and the former address is told at once with an undo link that restores it, signs every session
 * out and requires a new password, so a stolen session cannot turn into a permanent takeover.
 */
export function createEmailChangeService(deps: { db: DbTx; mailer: Mailer; appUrl: string; recorder: ActivityRecorder }) {
  const { db, mailer, recorder } = deps;

  return {
    /**
     * Records a pending address for a user locked by the caller's transaction; answers what to
     * e-mail once it commits. The undo link already sent for an earlier change, while alive, is
     * kept rather than replaced: the address the owner had first stays restorable.
     */
    async request(actor: Actor, user: User, newEmail: string, tx: DbTx) {
      const confirmToken = generateLinkToken();
      await tokens.issueToken(tx, {
        userId: user.id,
        purpose: 'email_change_confirm',
        tokenHash: hashToken(confirmToken),
        ttlMinutes: CONFIRM_TTL_MINUTES,
        email: newEmail,
      });
      let undoToken: string | null = null;
      if (!(await tokens.findLiveToken(tx, user.id, 'email_change_revert'))) {
        undoToken = generateLinkToken();
        await tokens.issueToken(tx, {
          userId: user.id,
          purpose: 'email_change_revert',
          tokenHash: hashToken(undoToken),
          ttlMinutes: UNDO_TTL_MINUTES,
          email: user.email,
        });
      }
      const updated = await usersRepo.updateUser(tx, user.id, { pendingEmail: newEmail });
      await recorder.record(
        actor,
        'user.email_change_requested',
        userSubject(user.id),
        { before: { email: user.email, pending_email: user.pendingEmail }, after: { pending_email: newEmail } },
        tx,
      );
      return {
        user: updated!,
        notify() {
          const confirmUrl = `${deps.appUrl}/verify-email?token=${encodeURIComponent(confirmToken)}`;
          const undoUrl = undoToken ? `${deps.appUrl}/revert-email-change?token=${encodeURIComponent(undoToken)}` : null;
          mailer.send(emailChangeConfirmLink, { email: newEmail, lang: user.lang }, { firstName: user.firstName, url: confirmUrl });
          mailer.send(emailChangeRequestedNotice, { email: user.email, lang: user.lang }, { firstName: user.firstName, newEmail, undoUrl });
        },
      };
    },

    /** Drops a pending change (the owner asked for the current address again); the undo link stays. */
    async cancel(actor: Actor, user: User, tx: DbTx) {
      await tokens.deleteTokens(tx, user.id, ['email_change_confirm']);
      const updated = await usersRepo.updateUser(tx, user.id, { pendingEmail: null });
      await recorder.record(
        actor,
        'user.email_change_cancelled',
        userSubject(user.id),
        { before: { pending_email: user.pendingEmail }, after: { pending_email: null } },
        tx,
      );
      return updated!;
    },

    /** Whether a confirmation link is live; nothing is used up. */
    async isLiveConfirmation(token: string) {
      return (await tokens.findLiveTokenByHash(db, 'email_change_confirm', hashToken(token))) !== undefined;
    },

    /**
     * Spends a confirmation link and makes the change: the new address becomes the account's
     * e-mail, verified. Undefined when the token is no confirmation link at all (the caller tries
     * its other kinds); 422 when it was one for a change asked for earlier and since replaced.
     */
    confirm(visitor: Anonymous, token: string): Promise<User | undefined> {
      return withTransaction(db, async (tx) => {
        const change = await tokens.redeemEmailTokenByHash(tx, 'email_change_confirm', hashToken(token));
        if (!change) return undefined;
        const before = await usersRepo.findUserById(tx, change.userId);
        if (await usersRepo.emailTakenByAnother(tx, change.email, change.userId)) throw addressTaken();
        let updated: User | undefined;
        try {
          updated = await repo.applyPendingEmail(tx, change.userId, change.email);
        } catch (error) {
          if (isUniqueViolation(error)) throw addressTaken();
          throw error;
        }
        if (!updated) throw invalidLink();
        // Links and codes sent to the former address have no business working any more.
        await tokens.deleteTokens(tx, change.userId, [
          'email_verification_link',
          'email_verification_otp',
          'password_reset_link',
          'password_reset_otp',
          'password_reset_grant',
        ]);
        await recorder.record(visitor, 'user.email_changed', userSubject(change.userId), { before: { email: before?.email }, after: { email: updated.email } }, tx);
        return updated;
      });
    },

    /**
     * The undo link: the former address comes back (or a pending change is dropped), every
     * session ends, the password and any social identity are unlinked, every other link or code
     * dies, and a password reset link goes to the restored address.
     */
    async revert(visitor: Anonymous, token: string) {
      const user = await withTransaction(db, async (tx) => {
        const undo = await tokens.redeemEmailTokenByHash(tx, 'email_change_revert', hashToken(token));
        if (!undo) throw invalidLink();
        const before = await usersRepo.findUserById(tx, undo.userId);
        if (!before) throw invalidLink();
        if (await usersRepo.emailTakenByAnother(tx, undo.email, undo.userId)) {
          throw new AppError('conflict', 'This address now belongs to another account; contact our support');
        }
        const restored = await repo.restoreEmail(tx, undo.userId, undo.email);
        if (!restored) throw invalidLink();
        await tokens.deleteTokens(tx, undo.userId, TOKEN_PURPOSES);
        await usersRepo.revokeUserSessions(tx, undo.userId);
        await recorder.record(
          visitor,
          'user.email_change_reverted',
          userSubject(undo.userId),
          {
            before: { email: before.email, pending_email: before.pendingEmail, has_password: before.passwordHash !== null },
            after: { email: restored.email, pending_email: null, has_password: false },
          },
          tx,
        );
        return restored;
      });
      const resetToken = generateLinkToken();
      await tokens.issueToken(db, {
        userId: user.id,
        purpose: 'password_reset_link',
        tokenHash: hashToken(resetToken),
        ttlMinutes: RESET_LINK_TTL_MINUTES,
      });
      const resetUrl = `${deps.appUrl}/reset-password?token=${encodeURIComponent(resetToken)}`;
      mailer.send(emailChangeRevertedNotice, { email: user.email, lang: user.lang }, { firstName: user.firstName, resetUrl });
      return user;
    },
  };
}

export type EmailChangeService = ReturnType<typeof createEmailChangeService>;
