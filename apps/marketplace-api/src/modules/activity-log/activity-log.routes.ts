import type { FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses } from '@repo/schemas';
import type { ActivityLogService } from './activity-log.service.js';
import { ActivityListEnvelope, ListActivityQuery, presentActivity } from './activity-log.schemas.js';

const security = [{ bearerAuth: [] }];

export function activityLogRoutes(deps: { activityLog: ActivityLogService }): FastifyPluginAsyncZod {
  return async (app) => {
    app.addHook('onRequest', app.auth.requireRole('admin'));

    app.get(
      '/admin/activity-log',
      {
        schema: {
          operationId: 'adminListActivityLog',
          tags: ['admin'],
          summary: 'The activity log, newest first: who did what to which subject, before/after, from where',
          security,
          querystring: ListActivityQuery,
          response: { 200: ActivityListEnvelope, ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const q = request.query;
        const { rows, meta } = await deps.activityLog.list(
          { actorId: q.actor_id, subjectType: q.subject_type, subjectId: q.subject_id, action: q.action, from: q.from, to: q.to },
          q.page,
          q.per_page,
        );
        return { data: rows.map(presentActivity), meta };
      },
    );
  };
}
