import { requireActor } from '@repo/auth';
import { AppError, type FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses } from '@repo/schemas';
import { ProjectScopedParams } from '../projects/index.js';
import type { FastifyRequest } from 'fastify';
import { TailQuery, TailTicketEnvelope } from './tail.schemas.js';
import type { TailService } from './tail.service.js';

/** The `ticket` query parameter, when it is the request's credential: an Authorization header wins. */
function presentedTicket(request: FastifyRequest): string | undefined {
  if (request.headers.authorization !== undefined) return undefined;
  const value = (request.query as Record<string, unknown> | undefined)?.ticket;
  return typeof value === 'string' && value !== '' ? value : undefined;
}

export function tailRoutes(deps: { tail: TailService }): FastifyPluginAsyncZod {
  return async (app) => {
    // Open live tails, for the metrics (websocket_connections{endpoint="tail"}).
    const connections = app.metrics.websocket('tail');

    app.post(
      '/projects/:project_id/logs/tail/tickets',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'createTailTicket',
          tags: ['logs'],
          summary: "A single-use ticket that opens this project's live tail from a browser (members only)",
          description: [
            'The ticket stands for the caller (and their session) on this project for one upgrade within 30 seconds:',
            'pass it as `ticket` when opening `GET /projects/{project_id}/logs/tail`. Unlike `access_token`, a URL',
            'holding it is worth nothing once used or expired, wherever it is logged or kept.',
          ].join(' '),
          security: [{ bearerAuth: [] }],
          params: ProjectScopedParams,
          response: { 201: TailTicketEnvelope, ...errorResponses(401, 404, 422, 429) },
        },
      },
      async (request, reply) => {
        const ticket = await deps.tail.issueTicket(requireActor(request), request.params.project_id);
        return reply.status(201).send({ data: ticket });
      },
    );

    app.route({
      method: 'GET',
      url: '/projects/:project_id/logs/tail',
      // Everything that can fail answers over HTTP, before the upgrade: 401, then 422, then 404.
      // Browsers cannot set headers on a WebSocket handshake (`new WebSocket(url)` takes no headers),
      // so the tail takes a single-use `?ticket=` (redeemed here, before the upgrade; the params are
      // not validated yet, and a project id that is not one matches no ticket) and, the older way,
      // the bearer token itself as `?access_token=`. The Authorization header wins over both. A URL
      // travels further than a header (proxies, access logs, history), which is why the request log
      // redacts both parameters from every URL it writes (redactUrl in @repo/http) and why no other
      // route takes them.
      onRequest: async (request) => {
        const ticket = presentedTicket(request);
        if (ticket === undefined) return app.auth.authenticate(request);
        request.actor = await deps.tail.redeemTicket(ticket, Number(request.params.project_id), request.id);
      },
      config: { auth: { queryToken: 'access_token' } },
      preHandler: async (request) => {
        await deps.tail.authorize(requireActor(request), request.params.project_id);
      },
      schema: {
        operationId: 'tailLogs',
        tags: ['logs'],
        summary: "A WebSocket streaming a project's new logs as they arrive (members only)",
        description: [
          'Open with `Upgrade: websocket`. Filters as in the list: `level`, `source`, `from_date`, `to_date`, `search`',
          '(case-insensitive substring of the message). The token goes in the Authorization header; a browser,',
          'which cannot set one on a WebSocket, passes a `ticket` from `POST /projects/{project_id}/logs/tail/tickets`',
          '(single-use, valid 30 s). `access_token` (the bearer token in the URL) still works but is less safe:',
          'the URL can end up in proxy logs and history. The server sends JSON text frames: `{"type":"ready"}` once subscribed,',
          'then `{"type":"log","data":<log as in the list>}` per new matching log; it pings every 30 s.',
          'Close codes: 1013 the client fell too far behind (reconnect), 4401 the session ended,',
          '4404 the project is gone or the caller is no longer a member. A plain GET answers 400.',
        ].join(' '),
        security: [{ bearerAuth: [] }],
        params: ProjectScopedParams,
        querystring: TailQuery,
        response: errorResponses(400, 401, 404, 422, 429),
      },
      handler: async () => {
        throw new AppError('bad_request', 'This route streams over a WebSocket: open it with Upgrade: websocket');
      },
      wsHandler: (socket, request) => {
        connections.opened();
        socket.once('close', connections.closed);
        const { level, source, from_date, to_date, search } = request.query;
        deps.tail.open(socket, requireActor(request), request.params.project_id, { level, source, from_date, to_date, search }, request.log);
      },
    });
  };
}
