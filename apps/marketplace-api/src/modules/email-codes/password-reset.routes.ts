import type { FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses, messageEnvelope } from '@repo/schemas';
import { anonymousOf } from '../../lib/context.js';
import { EmailBody } from './email-verification.schemas.js';
import { ResetGrantResponse, ResetPasswordBody, ResetPasswordOtpBody, VerifyResetOtpBody } from './password-reset.schemas.js';
import type { PasswordResetService } from './password-reset.service.js';

const RESET_DONE = 'Your password has been reset; sign in with the new one';

export function passwordResetRoutes(deps: { passwordReset: PasswordResetService }): FastifyPluginAsyncZod {
  return async (app) => {
    const { passwordReset } = deps;

    app.post(
      '/auth/forgot-password',
      {
        schema: {
          operationId: 'forgotPassword',
          tags: ['auth'],
          summary: 'E-mail a password reset link (valid 60 minutes); the answer never tells whether the address has an account',
          security: [],
          body: EmailBody,
          response: { 200: messageEnvelope, ...errorResponses(400, 422, 429) },
        },
      },
      async (request) => {
        await passwordReset.sendLink(request.body.email);
        return { message: 'If an account exists for this address, a password reset link has been sent' };
      },
    );

    app.post(
      '/auth/reset-password',
      {
        schema: {
          operationId: 'resetPassword',
          tags: ['auth'],
          summary: 'Set a new password with the token of the e-mailed link; every session is signed out',
          security: [],
          body: ResetPasswordBody,
          response: { 200: messageEnvelope, ...errorResponses(400, 422, 429) },
        },
      },
      async (request) => {
        await passwordReset.resetWithLink(anonymousOf(request), request.body.token, request.body.password);
        return { message: RESET_DONE };
      },
    );

    app.post(
      '/auth/send-password-reset-otp',
      {
        schema: {
          operationId: 'sendPasswordResetOtp',
          tags: ['auth'],
          summary: 'E-mail a 6-digit password reset code (valid 10 minutes, 5 attempts); the answer never tells whether the address has an account',
          security: [],
          body: EmailBody,
          response: { 200: messageEnvelope, ...errorResponses(400, 422, 429) },
        },
      },
      async (request) => {
        await passwordReset.sendOtp(request.body.email);
        return { message: 'If an account exists for this address, a password reset code has been sent' };
      },
    );

    app.post(
      '/auth/verify-password-reset-otp',
      {
        schema: {
          operationId: 'verifyPasswordResetOtp',
          tags: ['auth'],
          summary: 'Trade the e-mailed code for a single-use reset token valid 15 minutes',
          security: [],
          body: VerifyResetOtpBody,
          response: { 200: ResetGrantResponse, ...errorResponses(400, 422, 429) },
        },
      },
      async (request) => {
        const grant = await passwordReset.verifyOtp(request.body.email, request.body.otp);
        return { data: { reset_token: grant.resetToken, expires_in: grant.expiresIn }, message: 'Code accepted; choose a new password' };
      },
    );

    app.post(
      '/auth/reset-password-otp',
      {
        schema: {
          operationId: 'resetPasswordWithOtp',
          tags: ['auth'],
          summary: 'Set a new password with the e-mailed code (email and otp) or the reset token it was traded for; every session is signed out',
          security: [],
          body: ResetPasswordOtpBody,
          response: { 200: messageEnvelope, ...errorResponses(400, 422, 429) },
        },
      },
      async (request) => {
        const { body } = request;
        const proof = body.reset_token !== undefined ? { resetToken: body.reset_token } : { email: body.email!, otp: body.otp! };
        await passwordReset.resetWithOtp(anonymousOf(request), proof, body.password);
        return { message: RESET_DONE };
      },
    );
  };
}
