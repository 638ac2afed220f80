import { requireActor } from '@repo/auth';
import { AppError, type FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses } from '@repo/schemas';
import { ProjectScopedParams } from '../projects/index.js';
import { TailQuery } from './tail.schemas.js';
import type { TailService } from './tail.service.js';

export function tailRoutes(deps: { tail: TailService }): FastifyPluginAsyncZod {
  return async (app) => {
    // Open live tails, for the metrics (websocket_connections{endpoint="tail"}).
    const connections = app.metrics.websocket('tail');
    app.route({
      method: 'GET',
      url: '/projects/:project_id/logs/tail',
      // Everything that can fail answers over HTTP, before the upgrade: 401, then 422, then 404.
      onRequest: app.auth.authenticate,
      // Browsers cannot set headers on a WebSocket handshake (`new WebSocket(url)` takes no headers),
      // so the tail also takes the bearer token as `?access_token=`; the Authorization header wins
      // when both are sent. A URL travels further than a header (proxies, access logs), which is why
      // the request log redacts the parameter from every URL it writes (redactUrl in @repo/http) and
      // why no other route takes it.
      config: { auth: { queryToken: 'access_token' } },
      preHandler: async (request) => {
        await deps.tail.authorize(requireActor(request), request.params.project_id);
      },
      schema: {
        operationId: 'tailLogs',
        tags: ['logs'],
        summary: "A WebSocket streaming a project's new logs as they arrive (members only)",
        description: [
          'Open with `Upgrade: websocket`. Filters as in the list: `level`, `from_date`, `to_date`, `search`',
          '(case-insensitive substring of the message). The token goes in the Authorization header or, from a',
          'browser, in `access_token`. The server sends JSON text frames: `{"type":"ready"}` once subscribed,',
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
        const { level, from_date, to_date, search } = request.query;
        deps.tail.open(socket, requireActor(request), request.params.project_id, { level, from_date, to_date, search }, request.log);
      },
    });
  };
}
