import type { FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses, iso, messageEnvelope } from '@repo/schemas';
import { z } from 'zod';
import type { User } from '../../db/schema/index.js';
import { anonymousOf } from '../../lib/context.js';
import {
  ConfirmEmailBody,
  EmailBody,
  EmailVerifiedResponse,
  VerifyEmailOtpBody,
  VerifyEmailQuery,
} from './email-verification.schemas.js';
import type { EmailVerificationService } from './email-verification.service.js';

const VERIFIED = 'E-mail address verified';

function verified(user: User) {
  return { data: { email: user.email, email_verified: true as const, email_verified_at: iso(user.emailVerifiedAt!) }, message: VERIFIED };
}

export function emailVerificationRoutes(deps: { emailVerification: EmailVerificationService }): FastifyPluginAsyncZod {
  return async (app) => {
    const { emailVerification } = deps;

    app.get(
      '/auth/verify-email',
      {
        // The HEAD route below checks the link without spending it.
        exposeHeadRoute: false,
        schema: {
          operationId: 'verifyEmail',
          tags: ['auth'],
          summary: 'Verify an e-mail address with the token of the e-mailed link (valid 24 hours, single use)',
          security: [],
          querystring: VerifyEmailQuery,
          response: { 200: EmailVerifiedResponse, ...errorResponses(422, 429) },
        },
      },
      async (request) => verified(await emailVerification.confirmLink(anonymousOf(request), request.query.token)),
    );

    app.head(
      '/auth/verify-email',
      {
        schema: {
          operationId: 'checkVerifyEmailLink',
          tags: ['auth'],
          summary: 'Whether a verification link is still valid; it is not used up',
          querystring: VerifyEmailQuery,
          response: { 200: z.null(), ...errorResponses(422, 429) },
        },
      },
      async (request, reply) => {
        await emailVerification.checkLink(request.query.token);
        return reply.status(200).send(null);
      },
    );

    app.post(
      '/auth/confirm-email',
      {
        schema: {
          operationId: 'confirmEmail',
          tags: ['auth'],
          summary: 'Verify an e-mail address with the token of the e-mailed link, sent in the body',
          security: [],
          body: ConfirmEmailBody,
          response: { 200: EmailVerifiedResponse, ...errorResponses(400, 422, 429) },
        },
      },
      async (request) => verified(await emailVerification.confirmLink(anonymousOf(request), request.body.token)),
    );

    app.post(
      '/auth/resend-verification-email',
      {
        schema: {
          operationId: 'resendVerificationEmail',
          tags: ['auth'],
          summary: 'E-mail a new verification link; the answer is the same whether or not the address has an account',
          security: [],
          body: EmailBody,
          response: { 200: messageEnvelope, ...errorResponses(400, 422, 429) },
        },
      },
      async (request) => {
        await emailVerification.resendLink(request.body.email);
        return { message: 'If this address belongs to an account awaiting verification, a new verification link has been sent' };
      },
    );

    app.post(
      '/auth/send-email-verification-otp',
      {
        schema: {
          operationId: 'sendEmailVerificationOtp',
          tags: ['auth'],
          summary: 'E-mail a 6-digit verification code (valid 10 minutes, 5 attempts); the answer never tells whether the address has an account',
          security: [],
          body: EmailBody,
          response: { 200: messageEnvelope, ...errorResponses(400, 422, 429) },
        },
      },
      async (request) => {
        await emailVerification.sendOtp(request.body.email);
        return { message: 'If this address belongs to an account awaiting verification, a verification code has been sent' };
      },
    );

    app.post(
      '/auth/verify-email-otp',
      {
        schema: {
          operationId: 'verifyEmailOtp',
          tags: ['auth'],
          summary: 'Verify an e-mail address with the e-mailed 6-digit code',
          security: [],
          body: VerifyEmailOtpBody,
          response: { 200: EmailVerifiedResponse, ...errorResponses(400, 422, 429) },
        },
      },
      async (request) => verified(await emailVerification.confirmOtp(anonymousOf(request), request.body.email, request.body.otp)),
    );
  };
}
