import { iso, paginatedEnvelope, paginationQuery, timestamp } from '@repo/schemas';
import { z } from 'zod';
import { ALERT_CHANNELS, DELIVERY_STATUSES, LOG_LEVELS, type Alert, type AlertDelivery } from '../../db/schema/index.js';

export const ListAlertsQuery = paginationQuery({ defaultPerPage: 20, maxPerPage: 100 });
export type ListAlertsQuery = z.infer<typeof ListAlertsQuery>;

export const AlertSample = z.object({
  id: z.number().int(),
  level: z.enum(LOG_LEVELS),
  message: z.string(),
  source: z.string().nullable(),
  timestamp,
});

export const AlertDeliveryResponse = z.object({
  id: z.number().int(),
  channel: z.enum(ALERT_CHANNELS),
  target: z.string().describe('The webhook URL or the e-mail recipient'),
  status: z.enum(DELIVERY_STATUSES),
  attempts: z.number().int().describe('Attempts made so far'),
  last_error: z.string().nullable().describe('Why the latest failed attempt failed'),
  next_attempt_at: timestamp.nullable().describe('When the next attempt is due; null once delivered or failed'),
  delivered_at: timestamp.nullable(),
});

/** The alert as the list route and the webhook body show it (the webhook without its deliveries). */
export const AlertBody = z.object({
  id: z.number().int(),
  project_id: z.number().int(),
  levels: z.array(z.enum(LOG_LEVELS)).describe('The alert levels configured when it fired'),
  count: z.number().int().describe('Logs at those levels within the window'),
  threshold: z.number().int(),
  window_minutes: z.number().int(),
  window_start: timestamp,
  window_end: timestamp,
  samples: z.array(AlertSample).describe('Up to 5 of the newest logs of the window'),
  created_at: timestamp,
});

export const AlertResponse = AlertBody.extend({ deliveries: z.array(AlertDeliveryResponse) });

export const AlertListEnvelope = paginatedEnvelope(AlertResponse);

export function presentAlertBody(alert: Alert) {
  return {
    id: alert.id,
    project_id: alert.projectId,
    levels: alert.levels,
    count: alert.count,
    threshold: alert.threshold,
    window_minutes: alert.windowMinutes,
    window_start: iso(alert.windowStart),
    window_end: iso(alert.windowEnd),
    samples: alert.samples,
    created_at: iso(alert.createdAt),
  };
}

export function presentDelivery(delivery: AlertDelivery) {
  return {
    id: delivery.id,
    channel: delivery.channel,
    target: delivery.target,
    status: delivery.status,
    attempts: delivery.attempts,
    last_error: delivery.lastError,
    next_attempt_at: delivery.status === 'pending' ? iso(delivery.nextAttemptAt) : null,
    delivered_at: iso(delivery.deliveredAt),
  };
}

export function presentAlert(alert: Alert, deliveries: AlertDelivery[]) {
  return { ...presentAlertBody(alert), deliveries: deliveries.map(presentDelivery) };
}
