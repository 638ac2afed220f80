/** The conversations module's public entry: what the rest of the app may use of it. */
import type { ModuleContext, Mounted } from '../context.js';
import { conversationsRoutes } from './conversations.routes.js';
import { createConversationsService } from './conversations.service.js';

/** Conversations between a client and a prestataire, and disputes, whose resolution refunds what an administrator decided. */
export function conversationsModule({ db, recorder, outbox }: ModuleContext, more: { refunds: Parameters<typeof createConversationsService>[0]['refunds'] }): Mounted {
  return { routes: conversationsRoutes({ conversations: createConversationsService({ db, recorder, outbox, refunds: more.refunds }) }) };
}
