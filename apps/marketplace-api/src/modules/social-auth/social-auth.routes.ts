import type { FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses } from '@repo/schemas';
import type { IdentityProvider } from '../../integrations/identity/identity.js';
import { anonymousOf } from '../../lib/context.js';
import { AuthPayload, presentUser } from '../user-store/index.js';
import { SocialSignInBody } from './social-auth.schemas.js';
import type { SocialAuthService } from './social-auth.service.js';

const ROUTES: { provider: IdentityProvider; operationId: string; summary: string }[] = [
  {
    provider: 'google',
    operationId: 'signInWithGoogle',
    summary: 'Sign in with a Google ID token (creates a client account the first time)',
  },
  {
    provider: 'apple',
    operationId: 'signInWithApple',
    summary: 'Sign in with an Apple ID token (creates a client account the first time)',
  },
];

export function socialAuthRoutes(deps: { socialAuth: SocialAuthService }): FastifyPluginAsyncZod {
  return async (app) => {
    for (const { provider, operationId, summary } of ROUTES) {
      app.post(
        `/auth/social/${provider}`,
        {
          schema: {
            operationId,
            tags: ['auth'],
            summary,
            security: [],
            body: SocialSignInBody,
            response: {
              200: envelope(AuthPayload),
              201: envelope(AuthPayload),
              ...errorResponses(400, 401, 403, 409, 422, 429, 503),
            },
          },
        },
        async (request, reply) => {
          const { user, profile, created } = await deps.socialAuth.signIn(anonymousOf(request), provider, request.body);
          const { token } = await app.auth.issueToken(user.id, request);
          const data = { user: presentUser(user, profile), token, token_type: 'Bearer' as const };
          return reply.status(created ? 201 : 200).send({ data, message: created ? 'Account created' : 'Signed in' });
        },
      );
    }
  };
}
