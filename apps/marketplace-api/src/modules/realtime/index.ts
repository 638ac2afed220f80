/** The realtime module's public entry: what the rest of the app may use of it. */
export { createRealtimeConsumer } from './realtime.consumer.js';
export { createRealtimeHub } from './realtime.hub.js';
export { isConversationParty } from './realtime.repository.js';
export { broadcastingAuthRoutes, pusherSocketRoutes } from './realtime.routes.js';
export { createRealtimeService } from './realtime.service.js';
