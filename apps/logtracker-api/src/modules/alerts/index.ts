/** The alerts module's public entry: what the rest of the app may use of it. */
export { alertsRoutes } from './alerts.routes.js';
export { type AlertEvaluator, createAlertDeliveryService, createAlertEvaluator, createAlertsService, type DeliveryPass } from './alerts.service.js';
export { createWebhookGuard, type ResolveHost, type WebhookGuard } from './webhook-target.js';
