import { email, envelope, timestamp } from '@repo/schemas';
import { z } from 'zod';

/** A six-digit one-time code, as typed (spaces around it are forgiven, leading zeros kept). */
export const otpField = z.string().trim().regex(/^\d{6}$/, 'Must be a code of 6 digits');

/** The random token of an e-mailed link; only its hash is stored, so any text is safe to look up. */
export const linkTokenField = z.string().trim().min(1, 'Required').max(512);

export const EmailBody = z.object({ email });
export type EmailBody = z.infer<typeof EmailBody>;

export const VerifyEmailQuery = z.object({ token: linkTokenField });
export const ConfirmEmailBody = z.object({ token: linkTokenField });

export const VerifyEmailOtpBody = z.object({ email, otp: otpField });
export type VerifyEmailOtpBody = z.infer<typeof VerifyEmailOtpBody>;

export const EmailVerifiedResponse = envelope(
  z.object({
    email: z.string(),
    email_verified: z.literal(true),
    email_verified_at: timestamp,
  }),
);
