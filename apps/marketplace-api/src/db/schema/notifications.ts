import { sql } from 'drizzle-orm';
import { bigint, index, integer, jsonb, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { users } from './users.js';
import { marketplaceSchema } from './pg-schema.js';

/**
 * In-app notifications shown in a user's inbox (warnings from the back office, activity on their
 * requests and appointments). `type` says what happened; `data` carries ids the apps link to.
 */
export const notifications = marketplaceSchema.table(
  'notifications',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    type: text('type').notNull(),
    title: text('title').notNull(),
    body: text('body').notNull(),
    data: jsonb('data').$type<Record<string, unknown>>(),
    // The domain event it was made from: a redelivered event never notifies twice.
    eventId: bigint('event_id', { mode: 'number' }),
    readAt: timestamp('read_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('notifications_user_created_idx').on(t.userId, t.createdAt.desc()),
    // The unread badge counts a user's unread rows on every app start.
    uniqueIndex('notifications_event_user_unique').on(t.eventId, t.userId).where(sql`${t.eventId} is not null`),
    index('notifications_user_unread_idx').on(t.userId, t.createdAt.desc()).where(sql`${t.readAt} is null`),
    // A broadcast reaches each user once, however often its batch is retried (jobs/broadcasts.ts).
    uniqueIndex('notifications_broadcast_user_unique')
      .on(t.userId, sql`(${t.data}->>'broadcast_id')`)
      .where(sql`${t.type} = 'broadcast'`),
  ],
);

export type Notification = typeof notifications.$inferSelect;
export type NewNotification = typeof notifications.$inferInsert;
