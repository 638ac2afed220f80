import { sql } from 'drizzle-orm';
import { check, index, integer, jsonb, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { timestamps } from './columns.js';
import { users } from './users.js';
import { logtrackerSchema } from './pg-schema.js';

export const LOG_LEVELS = ['error', 'warning', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const PROJECT_ROLES = ['owner', 'member'] as const;
export type ProjectRole = (typeof PROJECT_ROLES)[number];

export interface NotificationSettings {
  enabled: boolean;
  webhook_url: string | null;
  email_recipients: string[];
  threshold: { count: number; window_minutes: number };
  quiet_period_minutes: number;
}

export const DEFAULT_NOTIFICATION_SETTINGS: NotificationSettings = {
  enabled: false,
  webhook_url: null,
  email_recipients: [],
  threshold: { count: 1, window_minutes: 5 },
  quiet_period_minutes: 15,
};

export const projects = logtrackerSchema.table(
  'projects',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    name: text('name').notNull(),
    description: text('description'),
    repositoryUrl: text('repository_url'),
    createdBy: integer('created_by').references(() => users.id, { onDelete: 'set null' }),
    retentionDays: integer('retention_days').notNull().default(30),
    alertLevels: jsonb('alert_levels').$type<LogLevel[]>().notNull().default(['error']),
    notificationSettings: jsonb('notification_settings')
      .$type<NotificationSettings>()
      .notNull()
      .default(DEFAULT_NOTIFICATION_SETTINGS),
    // Signs webhook bodies (HMAC-SHA256); generated per project, shown to its owners.
    webhookSecret: text('webhook_secret')
      .notNull()
      .default(sql`replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '')`),
    // When the last alert fired: the quiet period is measured from it, in one conditional update.
    lastAlertAt: timestamp('last_alert_at', { withTimezone: true }),
    ...timestamps,
  },
  (t) => [check('projects_retention_days_range', sql`${t.retentionDays} between 1 and 3650`)],
);

export const projectMembers = logtrackerSchema.table(
  'project_members',
  {
    projectId: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    role: text('role').$type<ProjectRole>().notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.projectId, t.userId] }),
    index('project_members_user_idx').on(t.userId),
    check('project_members_role_valid', sql`${t.role} in ('owner', 'member')`),
  ],
);

export type Project = typeof projects.$inferSelect;
