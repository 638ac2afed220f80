import type { FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses, paginatedEnvelope } from '@repo/schemas';
import { actorOf } from '../../lib/context.js';
import type { BroadcastsService } from './broadcasts.service.js';
import { BroadcastParams, BroadcastResponse, BroadcastsQuery, CreateBroadcastBody, presentBroadcast } from './broadcasts.schemas.js';

/** Broadcasts from the back office, sent in batches by the broadcasts job; their progress. */
export function broadcastsRoutes(deps: { broadcasts: BroadcastsService }): FastifyPluginAsyncZod {
  return async (app) => {
    app.addHook('onRequest', app.auth.requireRole('admin'));
    const security = [{ bearerAuth: [] }];

    app.post(
      '/admin/broadcast',
      {
        schema: {
          operationId: 'adminSendBroadcast',
          tags: ['admin'],
          summary: 'Queue a broadcast to all users, the clients or the prestataires (optionally of a city): a notification, a push, optionally an e-mail each',
          security,
          body: CreateBroadcastBody,
          response: { 202: envelope(BroadcastResponse), ...errorResponses(400, 401, 403, 422, 429) },
        },
      },
      async (request, reply) => {
        const broadcast = await deps.broadcasts.create(actorOf(request), request.body);
        return reply.status(202).send({ data: presentBroadcast(broadcast), message: 'Broadcast queued' });
      },
    );

    app.get(
      '/admin/broadcasts',
      {
        schema: {
          operationId: 'adminListBroadcasts',
          tags: ['admin'],
          summary: 'Broadcasts, newest first, with their progress',
          security,
          querystring: BroadcastsQuery,
          response: { 200: paginatedEnvelope(BroadcastResponse), ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await deps.broadcasts.list(actorOf(request), request.query.page, request.query.per_page);
        return { data: rows.map(presentBroadcast), meta };
      },
    );

    app.get(
      '/admin/broadcasts/:broadcast',
      {
        schema: {
          operationId: 'adminShowBroadcast',
          tags: ['admin'],
          summary: "A broadcast's progress: status, recipients counted and notified, start, end, last error",
          security,
          params: BroadcastParams,
          response: { 200: envelope(BroadcastResponse), ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => ({ data: presentBroadcast(await deps.broadcasts.get(actorOf(request), request.params.broadcast)) }),
    );
  };
}
