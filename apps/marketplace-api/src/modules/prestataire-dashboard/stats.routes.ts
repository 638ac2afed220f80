import type { FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses } from '@repo/schemas';
import { actorOf } from '../../lib/context.js';
import type { PrestataireDashboardService } from './stats.service.js';
import { DashboardEnvelope, DashboardQuery, StatsEnvelope, StatsQuery } from './stats.schemas.js';

const PERIOD_RULES =
  "`from`/`to` are days of the prestataire's time zone, both included (default the last 30 days, at most 366). " +
  'Requests received are those aimed at it and those it made an offer on.';

/** The prestataire's dashboard and statistics. */
export function prestataireDashboardRoutes(deps: { prestataireDashboard: PrestataireDashboardService }): FastifyPluginAsyncZod {
  return async (app) => {
    const prestataireOnly = app.auth.requireRole('prestataire');
    const security = [{ bearerAuth: [] }];
    const service = deps.prestataireDashboard;

    app.get(
      '/prestataire/dashboard',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'prestataireDashboard',
          tags: ['prestataire'],
          summary: 'Its requests received, offers sent and accepted, conversion, revenue, appointments by status and rating over a period',
          description: PERIOD_RULES,
          security,
          querystring: DashboardQuery,
          response: { 200: DashboardEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => ({ data: await service.dashboard(actorOf(request), request.query) }),
    );

    app.get(
      '/prestataire/stats',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'prestataireStats',
          tags: ['prestataire'],
          summary: 'The dashboard figures over a period with their series per day, week or month',
          description: PERIOD_RULES,
          security,
          querystring: StatsQuery,
          response: { 200: StatsEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => ({ data: await service.stats(actorOf(request), request.query) }),
    );
  };
}
