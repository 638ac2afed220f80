import { whileAuthenticated } from '@repo/auth';
import type { FastifyPluginAsyncZod } from '@repo/http';
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
        // Reads only: the session is checked alongside them (whileAuthenticated).
        config: { auth: { checkAlongside: true } },
        schema: {
          operationId: 'projectStats',
          tags: ['stats'],
          summary: 'Counts by level, a bucketed series, error rate, top sources and change against the previous period',
          description: [
            'Over `time_range` (default 24h), or over the custom range `from_date` to `to_date` (both, up to 400 days),',
            'which replaces it: its series is cut into the finest of 1 min, 5 min, 15 min, 1 h, 6 h and 1 day buckets',
            'that makes at most 120 (1 day past 120 days), its start aligned down to a bucket and its end up to the',
            'minute (buckets under an hour) or the hour; `from` and `to` answer the period so counted.',
            'Statistics read rollups kept 3 days by the minute and 62 days by the hour and the day: older counts are not there.',
          ].join(' '),
          security: [{ bearerAuth: [] }],
          params: ProjectScopedParams,
          querystring: StatsQuery,
          response: { 200: StatsEnvelope, ...errorResponses(401, 404, 422, 429) },
        },
      },
      async (request) => ({
        data: await whileAuthenticated(request, (caller) => deps.stats.forProject(caller, request.params.project_id, request.query)),
      }),
    );
  };
}
