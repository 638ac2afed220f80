import type { FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses, messageEnvelope } from '@repo/schemas';
import { actorOf } from '../../lib/context.js';
import type { NotificationsService } from './notifications.service.js';
import {
  CountEnvelope,
  NotificationListEnvelope,
  NotificationParams,
  NotificationResponse,
  NotificationsQuery,
  presentNotification,
} from './notifications.schemas.js';

const TAG = 'notifications';

export function notificationsRoutes(deps: { notifications: NotificationsService }): FastifyPluginAsyncZod {
  return async (app) => {
    const service = deps.notifications;
    const security = [{ bearerAuth: [] }];

    app.get(
      '/notifications',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'listNotifications',
          tags: [TAG],
          summary: 'Your notifications, newest first (`unread=true` for the unread ones); `meta.unread_count` is the badge',
          security,
          querystring: NotificationsQuery,
          response: { 200: NotificationListEnvelope, ...errorResponses(401, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await service.list(actorOf(request), request.query);
        return { data: rows.map(presentNotification), meta };
      },
    );

    app.post(
      '/notifications/read-all',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'markAllNotificationsRead',
          tags: [TAG],
          summary: 'Mark all your notifications read',
          security,
          response: { 200: CountEnvelope, ...errorResponses(401, 422, 429) },
        },
      },
      async (request) => {
        const count = await service.markAllRead(actorOf(request));
        return { data: { count }, message: 'Notifications marked as read' };
      },
    );

    app.post(
      '/notifications/:notification/read',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'markNotificationRead',
          tags: [TAG],
          summary: 'Mark one of your notifications read',
          security,
          params: NotificationParams,
          response: { 200: envelope(NotificationResponse), ...errorResponses(401, 404, 422, 429) },
        },
      },
      async (request) => {
        const row = await service.markRead(actorOf(request), request.params.notification);
        return { data: presentNotification(row), message: 'Notification marked as read' };
      },
    );

    app.delete(
      '/notifications/:notification',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'deleteNotification',
          tags: [TAG],
          summary: 'Delete one of your notifications',
          security,
          params: NotificationParams,
          response: { 200: messageEnvelope, ...errorResponses(401, 404, 422, 429) },
        },
      },
      async (request) => {
        await service.remove(actorOf(request), request.params.notification);
        return { message: 'Notification deleted' };
      },
    );

    app.delete(
      '/notifications',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'deleteAllNotifications',
          tags: [TAG],
          summary: 'Delete all your notifications',
          security,
          response: { 200: CountEnvelope, ...errorResponses(401, 422, 429) },
        },
      },
      async (request) => {
        const count = await service.removeAll(actorOf(request));
        return { data: { count }, message: 'Notifications deleted' };
      },
    );
  };
}
