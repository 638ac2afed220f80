import type { FastifyPluginAsyncZod } from '@repo/http';
import { requireActor } from '@repo/auth';
import { envelope, errorResponses, logoutSchema } from '@repo/schemas';
import type { AuthService } from './auth.service.js';
import { AuthResponse, LoginBody, presentUser, RegisterBody, UserResponse } from './auth.schemas.js';

export function authRoutes(deps: { auth: AuthService }): FastifyPluginAsyncZod {
  return async (app) => {
    app.post(
      '/auth/register',
      {
        schema: {
          operationId: 'register',
          tags: ['auth'],
          summary: 'Create an account and sign in',
          security: [],
          body: RegisterBody,
          response: { 201: AuthResponse, ...errorResponses(400, 409, 422, 429) },
        },
      },
      async (request, reply) => {
        const user = await deps.auth.register(request.body);
        const { token } = await app.auth.issueToken(user.id, request);
        return reply.status(201).send({ data: { user: presentUser(user), token, token_type: 'Bearer' as const }, message: 'Account created' });
      },
    );

    app.post(
      '/auth/login',
      {
        schema: {
          operationId: 'login',
          tags: ['auth'],
          summary: 'Sign in and receive a bearer token',
          security: [],
          body: LoginBody,
          response: { 200: AuthResponse, ...errorResponses(400, 401, 422, 429) },
        },
      },
      async (request) => {
        const user = await deps.auth.login(request.body, request.ip);
        const { token } = await app.auth.issueToken(user.id, request);
        return { data: { user: presentUser(user), token, token_type: 'Bearer' as const } };
      },
    );

    app.post(
      '/auth/logout',
      { onRequest: app.auth.authenticate, schema: logoutSchema },
      async (request) => {
        await deps.auth.logout(requireActor(request).sessionId);
        return { message: 'Logged out' };
      },
    );

    app.get(
      '/user',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'currentUser',
          tags: ['auth'],
          summary: 'The authenticated user',
          security: [{ bearerAuth: [] }],
          response: { 200: envelope(UserResponse), ...errorResponses(401, 429) },
        },
      },
      async (request) => ({ data: presentUser(await deps.auth.me(requireActor(request).userId)) }),
    );
  };
}
