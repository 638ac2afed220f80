import type { FastifyPluginAsyncZod } from '@repo/http';
import { requireActor } from '@repo/auth';
import { errorResponses } from '@repo/schemas';
import { ProjectScopedParams } from '../projects/index.js';
import type { StatsService } from './stats.service.js';
import { StatsEnvelope, StatsQuery } from './stats.schemas.js';

export function statsRoutes(deps: { stats: StatsService }): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/projects/:project_id/stats',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'projectStats',
          tags: ['stats'],
          summary: 'Counts by level, a bucketed series, error rate, top sources and change against the previous period',
          security: [{ bearerAuth: [] }],
          params: ProjectScopedParams,
          querystring: StatsQuery,
          response: { 200: StatsEnvelope, ...errorResponses(401, 404, 422, 429) },
        },
      },
      async (request) => ({
        data: await deps.stats.forProject(requireActor(request), request.params.project_id, request.query.time_range),
      }),
    );
  };
}
