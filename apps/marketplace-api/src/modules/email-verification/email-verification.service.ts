import { generateLinkToken, hashToken } from '@repo/auth';
import type { DbTx } from '../../db/index.js';
import type { User } from '../../db/schema/index.js';
import type { Mailer } from '../../integrations/mail/mailer.js';
import * as tokens from '../users/user-tokens.repository.js';
import { verifyEmailLink } from './email-verification.mail.js';

/** Verification links are valid 24 h (DESIGN.md §5). */
export const LINK_TTL_MINUTES = 24 * 60;

export function createEmailVerificationService(deps: { db: DbTx; mailer: Mailer; appUrl: string }) {
  const { db, mailer } = deps;
  return {
    /** E-mails a fresh verification link (replacing any earlier one); nothing for a verified address. */
    async sendLink(user: User) {
      if (user.emailVerifiedAt || user.deletedAt) return;
      const token = generateLinkToken();
      await tokens.issueToken(db, { userId: user.id, purpose: 'email_verification_link', tokenHash: hashToken(token), ttlMinutes: LINK_TTL_MINUTES });
      const url = `${deps.appUrl}/verify-email?token=${encodeURIComponent(token)}`;
      mailer.send(verifyEmailLink, { email: user.email, lang: user.lang }, { firstName: user.firstName, url });
    },
  };
}

export type EmailVerificationService = ReturnType<typeof createEmailVerificationService>;
