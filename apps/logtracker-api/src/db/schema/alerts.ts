import { sql } from 'drizzle-orm';
import { check, index, integer, jsonb, text, timestamp } from 'drizzle-orm/pg-core';
import { projects, type LogLevel } from './projects.js';
import { logtrackerSchema } from './pg-schema.js';

export const ALERT_CHANNELS = ['webhook', 'email'] as const;
export type AlertChannel = (typeof ALERT_CHANNELS)[number];
export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** A threshold crossing: `count` logs at alert levels within the window. */
export const alerts = logtrackerSchema.table(
  'alerts',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    projectId: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    levels: jsonb('levels').$type<LogLevel[]>().notNull(),
    count: integer('count').notNull(),
    threshold: integer('threshold').notNull(),
    windowMinutes: integer('window_minutes').notNull(),
    windowStart: timestamp('window_start', { withTimezone: true }).notNull(),
    windowEnd: timestamp('window_end', { withTimezone: true }).notNull(),
    samples: jsonb('samples').$type<{ id: number; level: LogLevel; message: string; source: string | null; timestamp: string }[]>().notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('alerts_project_created_idx').on(t.projectId, t.createdAt.desc())],
);

/** One channel's delivery of an alert, retried with backoff by the worker until it succeeds or gives up. */
export const alertDeliveries = logtrackerSchema.table(
  'alert_deliveries',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    alertId: integer('alert_id')
      .notNull()
      .references(() => alerts.id, { onDelete: 'cascade' }),
    channel: text('channel').$type<AlertChannel>().notNull(),
    target: text('target').notNull(),
    status: text('status').$type<DeliveryStatus>().notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }).notNull().defaultNow(),
    lastError: text('last_error'),
    deliveredAt: timestamp('delivered_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('alert_deliveries_due_idx').on(t.nextAttemptAt).where(sql`${t.status} = 'pending'`),
    index('alert_deliveries_alert_idx').on(t.alertId),
    check('alert_deliveries_channel_valid', sql`${t.channel} in ('webhook', 'email')`),
    check('alert_deliveries_status_valid', sql`${t.status} in ('pending', 'delivered', 'failed')`),
  ],
);

export type Alert = typeof alerts.$inferSelect;
export type AlertDelivery = typeof alertDeliveries.$inferSelect;
