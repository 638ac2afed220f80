/** The notifications module's public entry: what the rest of the app may use of it. */
import { createWebPushSender } from '../../integrations/push/push.js';
import type { ModuleContext, Mounted } from '../context.js';
import { createNotificationsConsumer, createWebPushConsumer } from './notifications.consumer.js';
import { notificationsRoutes } from './notifications.routes.js';
import { createNotificationsService } from './notifications.service.js';

export { presentNotification } from './notifications.schemas.js';

/**
 * The inbox, filled from the outbox's domain events (in the user's language); each new notification
 * is pushed to the user's browsers when VAPID keys are configured.
 */
export function notificationsModule({ db, outbox, config, pushAgent, consumers, app }: ModuleContext): Mounted {
  consumers.push(createNotificationsConsumer({ outbox }));
  const { vapid } = config.push;
  if (vapid) consumers.push(createWebPushConsumer({ sender: createWebPushSender({ vapid, agent: pushAgent }), log: app.log }));
  return { routes: notificationsRoutes({ notifications: createNotificationsService({ db }) }) };
}
