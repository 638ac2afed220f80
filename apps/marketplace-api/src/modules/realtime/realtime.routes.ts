import { AppError, type FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses } from '@repo/schemas';
import { actorOf } from '../../lib/context.js';
import type { RealtimeHub } from './realtime.hub.js';
import { BroadcastingAuthBody, BroadcastingAuthResponse, PusherSocketParams, PusherSocketQuery } from './realtime.schemas.js';
import type { RealtimeService } from './realtime.service.js';

const TAG = 'realtime';

/** `POST /broadcasting/auth` (under /api/v1): the signature a Pusher client subscribes with. */
export function broadcastingAuthRoutes(deps: { realtime: RealtimeService }): FastifyPluginAsyncZod {
  return async (app) => {
    // pusher-js and Laravel Echo post the form as application/x-www-form-urlencoded; only this
    // plugin's routes read it.
    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 4096 }, (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    });

    app.post(
      '/broadcasting/auth',
      {
        // A signature asked for again is the same signature: no Idempotency-Key (DESIGN.md §10).
        config: { idempotencyKey: false },
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'authorizeChannel',
          tags: [TAG],
          summary: 'Signs a subscription to a private channel you may join: your private-user.{id}, a conversation of yours',
          description:
            'Form-encoded or JSON `socket_id` (from `pusher:connection_established`) and `channel_name`. Answers Pusher\'s ' +
            '`{ "auth": "<key>:<hex HMAC-SHA256(secret, socket_id:channel_name)>" }`, not the envelope; any other channel answers 403.',
          security: [{ bearerAuth: [] }],
          consumes: ['application/json', 'application/x-www-form-urlencoded'],
          body: BroadcastingAuthBody,
          response: { 200: BroadcastingAuthResponse, ...errorResponses(400, 401, 403, 422, 429) },
        },
      },
      async (request) => deps.realtime.authorize(actorOf(request), request.body),
    );
  };
}

/** The Pusher channels protocol endpoint, `/app/{key}`, at the root of the marketplace's port. */
export function pusherSocketRoutes(deps: { hub: RealtimeHub }): FastifyPluginAsyncZod {
  return async (app) => {
    // Open Pusher-protocol sockets, for the metrics (websocket_connections{endpoint="realtime"}).
    const connections = app.metrics.websocket('realtime');
    app.route({
      method: 'GET',
      url: '/app/:key',
      schema: {
        operationId: 'openRealtimeSocket',
        tags: [TAG],
        summary: 'The real-time WebSocket, speaking the Pusher channels protocol (v7)',
        description: [
          'Open with `Upgrade: websocket` (pusher-js: `wsHost`, `wsPort`, `forceTLS: false`, `authEndpoint` = /api/v1/broadcasting/auth).',
          'The server sends `pusher:connection_established` with `socket_id` and `activity_timeout`; private channels are',
          'subscribed with the signature from the auth endpoint. Channels and events: README, DESIGN.md §8. A plain GET answers 400.',
        ].join(' '),
        // Open to all: the app key is public, and each private channel asks for its signature.
        security: [],
        params: PusherSocketParams,
        querystring: PusherSocketQuery,
        response: errorResponses(400, 422, 429),
      },
      handler: async () => {
        throw new AppError('bad_request', 'This route speaks the Pusher protocol over a WebSocket: open it with Upgrade: websocket');
      },
      wsHandler: (socket, request) => {
        connections.opened();
        socket.once('close', connections.closed);
        deps.hub.open(socket, request.params.key, request.query.protocol);
      },
    });
  };
}
