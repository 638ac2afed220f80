/** The broadcasts module's public entry: what the rest of the app may use of it. */
export { broadcastsRoutes } from './broadcasts.routes.js';
export { type BatchOutcome, type BroadcastsService, createBroadcastsService } from './broadcasts.service.js';
