import type { FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses, logoutSchema, messageEnvelope } from '@repo/schemas';
import type { FastifyRequest } from 'fastify';
import type { PrestataireProfile, User } from '../../db/schema/index.js';
import { actorOf, anonymousOf } from '../../lib/context.js';
import { presentUser } from '../user-store/index.js';
import { AuthResponse, ChangePasswordBody, LoginBody, RegisterClientBody, RegisterPrestataireBody } from './auth.schemas.js';
import type { AuthService } from './auth.service.js';

export function authRoutes(deps: { auth: AuthService }): FastifyPluginAsyncZod {
  return async (app) => {
    /** Opens a session for the account and answers `{ user, token }`. */
    async function signedIn(request: FastifyRequest, user: User, profile: PrestataireProfile | null) {
      const { token } = await app.auth.issueToken(user.id, request);
      return { user: presentUser(user, profile), token, token_type: 'Bearer' as const };
    }

    app.post(
      '/auth/register/client',
      {
        schema: {
          operationId: 'registerClient',
          tags: ['auth'],
          summary: 'Create a client account and sign in; a link to confirm the e-mail address is sent',
          security: [],
          body: RegisterClientBody,
          response: { 201: AuthResponse, ...errorResponses(400, 409, 422, 429) },
        },
      },
      async (request, reply) => {
        const { user, profile } = await deps.auth.registerClient(anonymousOf(request), request.body);
        return reply.status(201).send({
          data: await signedIn(request, user, profile),
          message: 'Account created; a link to confirm your e-mail address has been sent',
        });
      },
    );

    app.post(
      '/auth/register/prestataire',
      {
        schema: {
          operationId: 'registerPrestataire',
          tags: ['auth'],
          summary: 'Create a prestataire account with its business profile (validation pending) and sign in',
          description:
            'The location is either `latitude` and `longitude`, or a `city_id` from `GET /cities` (its name and coordinates are then used).',
          security: [],
          body: RegisterPrestataireBody,
          response: { 201: AuthResponse, ...errorResponses(400, 409, 422, 429) },
        },
      },
      async (request, reply) => {
        const { user, profile } = await deps.auth.registerPrestataire(anonymousOf(request), request.body);
        return reply.status(201).send({
          data: await signedIn(request, user, profile),
          message: 'Account created; your business profile awaits validation and a link to confirm your e-mail address has been sent',
        });
      },
    );

    app.post(
      '/auth/login',
      {
        schema: {
          operationId: 'login',
          tags: ['auth'],
          summary: 'Sign in with e-mail and password and receive a bearer token',
          security: [],
          body: LoginBody,
          response: { 200: AuthResponse, ...errorResponses(400, 401, 403, 422, 429) },
        },
      },
      async (request) => {
        const { user, profile } = await deps.auth.login(anonymousOf(request), request.body, { prestataireOnly: false });
        return { data: await signedIn(request, user, profile) };
      },
    );

    app.post(
      '/auth/login/prestataire',
      {
        schema: {
          operationId: 'loginPrestataire',
          tags: ['auth'],
          summary: 'Sign in to the prestataire app; other accounts are refused',
          security: [],
          body: LoginBody,
          response: { 200: AuthResponse, ...errorResponses(400, 401, 403, 422, 429) },
        },
      },
      async (request) => {
        const { user, profile } = await deps.auth.login(anonymousOf(request), request.body, { prestataireOnly: true });
        return { data: await signedIn(request, user, profile) };
      },
    );

    app.post(
      '/auth/logout',
      { onRequest: app.auth.authenticate, schema: logoutSchema },
      async (request) => {
        await deps.auth.logout(actorOf(request));
        return { message: 'Signed out' };
      },
    );

    app.post(
      '/auth/change-password',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'changePassword',
          tags: ['auth'],
          summary: 'Change the password; every other session is signed out',
          description:
            'An account made by social sign-in has no password yet: it sets one without `current_password`, within 15 minutes of signing in.',
          security: [{ bearerAuth: [] }],
          body: ChangePasswordBody,
          response: { 200: messageEnvelope, ...errorResponses(400, 401, 403, 409, 422, 429) },
        },
      },
      async (request) => {
        await deps.auth.changePassword(actorOf(request), request.body);
        return { message: 'Password changed; your other sessions have been signed out' };
      },
    );
  };
}
