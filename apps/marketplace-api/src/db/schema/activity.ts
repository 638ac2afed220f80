import { bigint, index, integer, jsonb, text, timestamp } from 'drizzle-orm/pg-core';
import { users } from './users.js';
import { marketplaceSchema } from './pg-schema.js';

/**
 * Every admin action and every state change of an account or of money: who (null for the system),
 * what, on which subject, before/after, from where.
 */
export const activityLog = marketplaceSchema.table(
  'activity_log',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    actorId: integer('actor_id').references(() => users.id, { onDelete: 'set null' }),
    actorRole: text('actor_role'),
    action: text('action').notNull(),
    subjectType: text('subject_type').notNull(),
    subjectId: integer('subject_id'),
    before: jsonb('before').$type<Record<string, unknown>>(),
    after: jsonb('after').$type<Record<string, unknown>>(),
    ip: text('ip'),
    requestId: text('request_id'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('activity_log_created_idx').on(t.createdAt),
    index('activity_log_subject_idx').on(t.subjectType, t.subjectId, t.createdAt),
    index('activity_log_actor_idx').on(t.actorId, t.createdAt),
    index('activity_log_action_idx').on(t.action, t.createdAt),
  ],
);

export type ActivityLogEntry = typeof activityLog.$inferSelect;
