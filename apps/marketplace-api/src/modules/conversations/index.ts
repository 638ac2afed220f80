/** The conversations module's public entry: what the rest of the app may use of it. */
export { conversationsRoutes } from './conversations.routes.js';
export { createConversationsService } from './conversations.service.js';
