import { requireActor } from '@repo/auth';
import type { FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses } from '@repo/schemas';
import { ProjectScopedParams } from '../projects/index.js';
import { AlertListEnvelope, ListAlertsQuery, presentAlert } from './alerts.schemas.js';
import type { AlertsService } from './alerts.service.js';

const security = [{ bearerAuth: [] }];

export function alertsRoutes(deps: { alerts: AlertsService }): FastifyPluginAsyncZod {
  return async (app) => {
    app.addHook('onRequest', app.auth.authenticate);

    app.get(
      '/projects/:project_id/alerts',
      {
        schema: {
          operationId: 'listAlerts',
          tags: ['alerts'],
          summary: "The project's alerts, newest first, with the state of each delivery",
          description:
            'An alert is recorded when logs at the alert levels reach the threshold within its window, at most once per quiet period; ' +
            'its webhook and e-mail deliveries are sent by a background worker with retries.',
          security,
          params: ProjectScopedParams,
          querystring: ListAlertsQuery,
          response: { 200: AlertListEnvelope, ...errorResponses(401, 404, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await deps.alerts.list(requireActor(request), request.params.project_id, request.query);
        return { data: rows.map((row) => presentAlert(row.alert, row.deliveries)), meta };
      },
    );
  };
}
