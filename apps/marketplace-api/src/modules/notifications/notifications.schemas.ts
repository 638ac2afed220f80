import { bigId, iso, paginationMeta, paginationQuery, timestamp } from '@repo/schemas';
import { z } from 'zod';
import type { Notification } from '../../db/schema/index.js';

export const NotificationParams = z.object({ notification: bigId });

export const NotificationsQuery = paginationQuery({ defaultPerPage: 20, maxPerPage: 100 }).extend({
  unread: z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1').optional(),
});
export type NotificationsQuery = z.infer<typeof NotificationsQuery>;

export const NotificationResponse = z.object({
  id: z.number().int(),
  /** What happened: the domain event's type (`offer.created`, `message.created`…) or `admin.warning`. */
  type: z.string(),
  title: z.string(),
  body: z.string(),
  /** The ids the apps link to (`appointment_id`, `conversation_id`…). */
  data: z.record(z.string(), z.unknown()),
  read_at: timestamp.nullable(),
  created_at: timestamp,
});
export type NotificationResponse = z.infer<typeof NotificationResponse>;

export function presentNotification(n: Notification): NotificationResponse {
  return { id: n.id, type: n.type, title: n.title, body: n.body, data: n.data ?? {}, read_at: iso(n.readAt), created_at: iso(n.createdAt) };
}

export const NotificationListEnvelope = z.object({
  data: z.array(NotificationResponse),
  meta: paginationMeta.extend({ unread_count: z.number().int() }),
  message: z.string().optional(),
});

export const CountEnvelope = z.object({ data: z.object({ count: z.number().int() }), message: z.string() });
