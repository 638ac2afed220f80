import { generateLinkToken, hashPassword, hashToken, type CounterSource } from '@repo/auth';
import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { TokenPurpose } from '../../db/schema/index.js';
import type { Mailer } from '../../integrations/mail/mailer.js';
import type { Anonymous } from '../../lib/context.js';
import { type ActivityRecorder, userSubject } from '../activity-log/index.js';
import { createSendLimit, invalidCode, invalidLink, issueOtp, mayReceiveMail, redeemOtp } from './one-time-codes.js';
import { userRecords as usersRepo, tokenRecords as tokens } from '../user-store/index.js';
import { passwordResetLink, passwordResetNotice, passwordResetOtp } from './password-reset.mail.js';
import * as repo from './password-reset.repository.js';

/** Reset links are valid 60 minutes (DESIGN.md §5). */
export const RESET_LINK_TTL_MINUTES = 60;
/** What verifying a reset code grants: 15 minutes to choose the new password. */
export const RESET_GRANT_TTL_MINUTES = 15;

const RESET_PURPOSES = ['password_reset_link', 'password_reset_otp', 'password_reset_grant'] as const satisfies readonly TokenPurpose[];

type ResetMethod = 'link' | 'otp';

function invalidResetToken(): AppError {
  return AppError.validation({ reset_token: ['The reset token is invalid or has expired'] }, 'The reset token is invalid or has expired');
}

export function createPasswordResetService(deps: {
  db: DbTx;
  mailer: Mailer;
  appUrl: string;
  recorder: ActivityRecorder;
  /** Where the e-mail send counts live (shared by every instance); this process's memory by default. */
  counters?: CounterSource;
}) {
  const { db, mailer } = deps;
  const sends = createSendLimit({ counters: deps.counters });

  /** The account a reset may be sent to: live and active; with or without a password (social sign-in). */
  async function resettableAccount(email: string) {
    const user = await usersRepo.findUserByEmail(db, email);
    return mayReceiveMail(user) ? user : undefined;
  }

  /** 422 unless the code is the account's live one; the code is then used up. */
  async function redeemCode(email: string, otp: string) {
    const user = await usersRepo.findUserByEmail(db, email);
    // The attempt is committed on its own: a wrong code must count even though the request fails.
    if (!mayReceiveMail(user) || !(await redeemOtp(db, user.id, 'password_reset_otp', otp))) throw invalidCode();
    return user.id;
  }

  /**
   * Sets the new password once the link, code or grant has been used up: every session ends,
   * every other reset link, code or grant dies, and the owner is told by e-mail.
   */
  async function setPassword(visitor: Anonymous, userId: number, password: string, method: ResetMethod, rejection: () => AppError) {
    const passwordHash = await hashPassword(password);
    const user = await withTransaction(db, async (tx) => {
      const updated = await repo.setPasswordHash(tx, userId, passwordHash);
      if (!updated) return undefined;
      await tokens.deleteTokens(tx, userId, RESET_PURPOSES);
      await usersRepo.revokeUserSessions(tx, userId);
      await deps.recorder.record(visitor, 'user.password_reset', userSubject(userId), { after: { method } }, tx);
      return updated;
    });
    // Suspended or deleted between the redemption and now.
    if (!user) throw rejection();
    mailer.send(passwordResetNotice, { email: user.email, lang: user.lang }, { firstName: user.firstName });
  }

  return {
    /** E-mails a reset link to a live, active account; the same silence for every other address. */
    async sendLink(email: string) {
      await sends.take('password_reset_link', email);
      const user = await resettableAccount(email);
      if (!user) return;
      const token = generateLinkToken();
      await tokens.issueToken(db, { userId: user.id, purpose: 'password_reset_link', tokenHash: hashToken(token), ttlMinutes: RESET_LINK_TTL_MINUTES });
      const url = `${deps.appUrl}/reset-password?token=${encodeURIComponent(token)}`;
      mailer.send(passwordResetLink, { email: user.email, lang: user.lang }, { firstName: user.firstName, url });
    },

    async sendOtp(email: string) {
      await sends.take('password_reset_otp', email);
      const user = await resettableAccount(email);
      if (!user) return;
      const code = await issueOtp(db, user.id, 'password_reset_otp');
      mailer.send(passwordResetOtp, { email: user.email, lang: user.lang }, { firstName: user.firstName, code });
    },

    /** Trades a right code for a single-use grant to set the password within 15 minutes. */
    async verifyOtp(email: string, otp: string) {
      const userId = await redeemCode(email, otp);
      const resetToken = generateLinkToken();
      await tokens.issueToken(db, { userId, purpose: 'password_reset_grant', tokenHash: hashToken(resetToken), ttlMinutes: RESET_GRANT_TTL_MINUTES });
      return { resetToken, expiresIn: RESET_GRANT_TTL_MINUTES * 60 };
    },

    async resetWithLink(visitor: Anonymous, token: string, password: string) {
      const userId = await tokens.redeemTokenByHash(db, 'password_reset_link', hashToken(token));
      if (userId === undefined) throw invalidLink();
      await setPassword(visitor, userId, password, 'link', invalidLink);
    },

    async resetWithOtp(visitor: Anonymous, proof: { resetToken: string } | { email: string; otp: string }, password: string) {
      if ('resetToken' in proof) {
        const userId = await tokens.redeemTokenByHash(db, 'password_reset_grant', hashToken(proof.resetToken));
        if (userId === undefined) throw invalidResetToken();
        await setPassword(visitor, userId, password, 'otp', invalidResetToken);
        return;
      }
      await setPassword(visitor, await redeemCode(proof.email, proof.otp), password, 'otp', invalidCode);
    },
  };
}

export type PasswordResetService = ReturnType<typeof createPasswordResetService>;
