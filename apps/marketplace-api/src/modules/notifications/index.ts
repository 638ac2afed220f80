/** The notifications module's public entry: what the rest of the app may use of it. */
export { createNotificationsConsumer, createWebPushConsumer } from './notifications.consumer.js';
export { notificationsRoutes } from './notifications.routes.js';
export { presentNotification } from './notifications.schemas.js';
export { createNotificationsService } from './notifications.service.js';
