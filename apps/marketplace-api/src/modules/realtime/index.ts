/** The realtime module's public entry: what the rest of the app may use of it. */
import { createFanout } from '@repo/db';
import type { ModuleContext } from '../context.js';
import { createRealtimeConsumer } from './realtime.consumer.js';
import { createRealtimeHub } from './realtime.hub.js';
import { isConversationParty } from './realtime.repository.js';
import { broadcastingAuthRoutes, pusherSocketRoutes } from './realtime.routes.js';
import { createRealtimeService } from './realtime.service.js';

/**
 * Real-time (DESIGN.md §8): the Pusher-protocol socket at /app/{key}, fed by the outbox through a
 * fan-out that reaches every instance's subscribers (LISTEN/NOTIFY; within the process on PGlite),
 * and the signatures of the private channels a user may join.
 */
export function realtimeModule({ app, database, db, config, consumers }: ModuleContext) {
  const { pusher } = config;
  const fanout = createFanout(database, {
    channel: 'realtime',
    onError: (error) => app.log.warn({ err: error }, 'real-time fan-out: a message was not delivered'),
  });
  const hub = createRealtimeHub({ fanout, options: pusher, log: app.log });
  app.addHook('onReady', () => fanout.start());
  app.addHook('onClose', async () => {
    hub.close();
    await fanout.close();
  });
  consumers.push(createRealtimeConsumer({ hub }));
  const realtime = createRealtimeService({
    key: pusher.key,
    secret: pusher.secret,
    isParty: (userId, conversationId) => isConversationParty(db, userId, conversationId),
  });
  return { socket: pusherSocketRoutes({ hub }), routes: broadcastingAuthRoutes({ realtime }) };
}
