import type { FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses, messageEnvelope } from '@repo/schemas';
import { anonymousOf } from '../../lib/context.js';
import { RevertEmailChangeBody } from './email-change.schemas.js';
import type { EmailChangeService } from './email-change.service.js';

/**
 * The undo of an e-mail change. Its confirmation needs no route of its own: the link sent to the
 * new address is confirmed through `GET /auth/verify-email` or `POST /auth/confirm-email`.
 */
export function emailChangeRoutes(deps: { emailChange: EmailChangeService }): FastifyPluginAsyncZod {
  return async (app) => {
    app.post(
      '/auth/revert-email-change',
      {
        schema: {
          operationId: 'revertEmailChange',
          tags: ['auth'],
          summary: 'Undo an e-mail change with the token e-mailed to the former address (valid 7 days, single use)',
          description:
            'Restores the former address (or drops a change not yet confirmed), signs out every session, removes the password and any linked social identity, and e-mails a password reset link to the restored address.',
          security: [],
          body: RevertEmailChangeBody,
          response: { 200: messageEnvelope, ...errorResponses(400, 409, 422, 429) },
        },
      },
      async (request) => {
        await deps.emailChange.revert(anonymousOf(request), request.body.token);
        return { message: 'The former e-mail address is restored; every session has been signed out and a link to choose a new password has been sent' };
      },
    );
  };
}
