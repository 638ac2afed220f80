import type { FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses } from '@repo/schemas';
import { actorOf } from '../../lib/context.js';
import { EstimateBody, EstimateResponse } from './labor.schemas.js';
import type { LaborService } from './labor.service.js';

export function laborRoutes(deps: { labor: LaborService }): FastifyPluginAsyncZod {
  return async (app) => {
    app.post(
      '/prestataire/labor/estimate',
      {
        onRequest: app.auth.requireRole('prestataire'),
        schema: {
          operationId: 'estimateLabor',
          tags: ['prestataire'],
          summary: 'Instant labour quote: repair times × hourly rate, per task, with an optional explanation',
          security: [{ bearerAuth: [] }],
          body: EstimateBody,
          response: { 200: envelope(EstimateResponse), ...errorResponses(400, 401, 403, 404, 422, 429, 502) },
        },
      },
      async (request) => ({ data: await deps.labor.estimate(actorOf(request), request.body) }),
    );
  };
}
