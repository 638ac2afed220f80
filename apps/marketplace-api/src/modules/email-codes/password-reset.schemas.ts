import { email, envelope, passwordField } from '@repo/schemas';
import { z } from 'zod';
import { linkTokenField, otpField } from './email-verification.schemas.js';

const newPassword = {
  password: passwordField,
  password_confirmation: z.string().max(256),
};

function confirmationMatches(body: { password: string; password_confirmation: string }, ctx: z.RefinementCtx) {
  if (body.password !== body.password_confirmation) {
    ctx.addIssue({ code: 'custom', path: ['password_confirmation'], message: 'Password confirmation does not match' });
  }
}

export const ResetPasswordBody = z.object({ token: linkTokenField, ...newPassword }).superRefine(confirmationMatches);
export type ResetPasswordBody = z.infer<typeof ResetPasswordBody>;

export const VerifyResetOtpBody = z.object({ email, otp: otpField });

/** The code itself, or the grant that verifying the code gave; one of the two. */
export const ResetPasswordOtpBody = z
  .object({
    email: email.optional(),
    otp: otpField.optional(),
    reset_token: linkTokenField.optional(),
    ...newPassword,
  })
  .superRefine((body, ctx) => {
    if (body.reset_token === undefined) {
      const hint = 'Required unless a reset_token is given';
      if (body.email === undefined) ctx.addIssue({ code: 'custom', path: ['email'], message: hint });
      if (body.otp === undefined) ctx.addIssue({ code: 'custom', path: ['otp'], message: hint });
    }
    confirmationMatches(body, ctx);
  });
export type ResetPasswordOtpBody = z.infer<typeof ResetPasswordOtpBody>;

export const ResetGrantResponse = envelope(
  z.object({
    reset_token: z.string(),
    /** Seconds the grant stays valid. */
    expires_in: z.number().int(),
  }),
);
