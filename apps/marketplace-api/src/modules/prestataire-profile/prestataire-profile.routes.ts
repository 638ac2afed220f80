import type { FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses } from '@repo/schemas';
import { actorOf } from '../../lib/context.js';
import { presentUser, UserResponse } from '../user-store/index.js';
import { UpdateProfileBody } from './prestataire-profile.schemas.js';
import type { PrestataireProfileService } from './prestataire-profile.service.js';

export function prestataireProfileRoutes(deps: { prestataireProfile: PrestataireProfileService }): FastifyPluginAsyncZod {
  return async (app) => {
    for (const method of ['PUT', 'PATCH'] as const) {
      app.route({
        method,
        url: '/prestataire/profile',
        onRequest: app.auth.requireRole('prestataire'),
        schema: {
          operationId: method === 'PUT' ? 'updatePrestataireProfile' : 'patchPrestataireProfile',
          tags: ['prestataire'],
          summary: 'Change your business profile (only the fields given)',
          description: 'SIRET and validation status are not editable here; they are ignored if sent.',
          security: [{ bearerAuth: [] }],
          body: UpdateProfileBody,
          response: { 200: envelope(UserResponse), ...errorResponses(400, 401, 403, 404, 422, 429) },
        },
        handler: async (request) => {
          const { user, profile } = await deps.prestataireProfile.update(actorOf(request), request.body);
          return { data: presentUser(user, profile), message: 'Profile updated' };
        },
      });
    }
  };
}
