import { generateLinkToken, hashToken, type CounterSource } from '@repo/auth';
import { withTransaction } from '@repo/db';
import type { DbTx } from '../../db/index.js';
import type { User } from '../../db/schema/index.js';
import type { Mailer } from '../../integrations/mail/mailer.js';
import type { Anonymous } from '../../lib/context.js';
import { type ActivityRecorder, userSubject } from '../activity-log/index.js';
import type { EmailChangeService } from './email-change.service.js';
import { userRecords as usersRepo, tokenRecords as tokens } from '../user-store/index.js';
import { verifyEmailLink, verifyEmailOtp } from './email-verification.mail.js';
import * as repo from './email-verification.repository.js';
import { createSendLimit, invalidCode, invalidLink, issueOtp, mayReceiveMail, redeemOtp } from './one-time-codes.js';

/** Verification links are valid 24 h (DESIGN.md §5). */
export const LINK_TTL_MINUTES = 24 * 60;

export function createEmailVerificationService(deps: {
  db: DbTx;
  mailer: Mailer;
  appUrl: string;
  recorder: ActivityRecorder;
  /** A link sent to the new address of an e-mail change is confirmed by the same routes. */
  emailChange?: Pick<EmailChangeService, 'confirm' | 'isLiveConfirmation'>;
  /** Where the e-mail send counts live (shared by every instance); this process's memory by default. */
  counters?: CounterSource;
}) {
  const { db, mailer } = deps;
  const sends = createSendLimit({ counters: deps.counters });

  /** An account awaiting verification that may be e-mailed; anything else gets no e-mail, silently. */
  async function pendingAccount(email: string) {
    const user = await usersRepo.findUserByEmail(db, email);
    return mayReceiveMail(user) && !user.emailVerifiedAt ? user : undefined;
  }

  /**
   * Marks the address verified and logs it the first time; a second verification (a link and a
   * code both used, or a link kept after verifying) is a quiet success.
   */
  function markVerified(visitor: Anonymous, userId: number, method: 'link' | 'otp', tx: DbTx) {
    return withTransaction(tx, async (inner) => {
      const updated = await repo.markEmailVerified(inner, userId);
      if (updated) {
        await deps.recorder.record(visitor, 'user.email_verified', userSubject(userId), { after: { email: updated.email, method } }, inner);
        return updated;
      }
      const user = await usersRepo.findUserById(inner, userId);
      if (!user?.emailVerifiedAt) throw new Error(`user ${userId} vanished while verifying its e-mail`);
      return user;
    });
  }

  return {
    /** E-mails a fresh verification link (replacing any earlier one); nothing for a verified address. */
    async sendLink(user: User) {
      if (user.emailVerifiedAt || user.deletedAt) return;
      const token = generateLinkToken();
      await tokens.issueToken(db, { userId: user.id, purpose: 'email_verification_link', tokenHash: hashToken(token), ttlMinutes: LINK_TTL_MINUTES });
      const url = `${deps.appUrl}/verify-email?token=${encodeURIComponent(token)}`;
      mailer.send(verifyEmailLink, { email: user.email, lang: user.lang }, { firstName: user.firstName, url });
    },

    /** A new link for an account awaiting verification; the same silence for every other address. */
    async resendLink(email: string) {
      await sends.take('email_verification_link', email);
      const user = await pendingAccount(email);
      if (user) await this.sendLink(user);
    },

    async sendOtp(email: string) {
      await sends.take('email_verification_otp', email);
      const user = await pendingAccount(email);
      if (!user) return;
      const code = await issueOtp(db, user.id, 'email_verification_otp');
      mailer.send(verifyEmailOtp, { email: user.email, lang: user.lang }, { firstName: user.firstName, code });
    },

    /** 422 unless the link is live; uses nothing up (a HEAD request must not spend the link). */
    async checkLink(token: string) {
      const row = await tokens.findLiveTokenByHash(db, 'email_verification_link', hashToken(token));
      if (row) return;
      if (!(await deps.emailChange?.isLiveConfirmation(token))) throw invalidLink();
    },

    /**
     * Spends the link and verifies its account's address, both or neither; a link sent to the new
     * address of an e-mail change makes that change.
     */
    async confirmLink(visitor: Anonymous, token: string) {
      const verified = await withTransaction(db, async (tx) => {
        const userId = await tokens.redeemTokenByHash(tx, 'email_verification_link', hashToken(token));
        return userId === undefined ? undefined : markVerified(visitor, userId, 'link', tx);
      });
      const user = verified ?? (await deps.emailChange?.confirm(visitor, token));
      if (!user) throw invalidLink();
      return user;
    },

    async confirmOtp(visitor: Anonymous, email: string, otp: string) {
      const user = await usersRepo.findUserByEmail(db, email);
      // The attempt is committed on its own: a wrong code must count even though the request fails.
      if (!mayReceiveMail(user) || !(await redeemOtp(db, user.id, 'email_verification_otp', otp))) throw invalidCode();
      return markVerified(visitor, user.id, 'otp', db);
    },
  };
}

export type EmailVerificationService = ReturnType<typeof createEmailVerificationService>;
