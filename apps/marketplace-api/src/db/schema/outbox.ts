import { sql } from 'drizzle-orm';
import { bigint, index, integer, jsonb, text, timestamp } from 'drizzle-orm/pg-core';
import { marketplaceSchema } from './pg-schema.js';

/**
 * The outbox: every state move of the marketplace, written as a domain event by the transaction
 * that makes the move. Consumers (notifications, real-time, push) read it in commit order by
 * `(tx_id, id)`: `tx_id` is the writing transaction's id, and a consumer reads only the events of
 * transactions older than its snapshot's oldest running one, so an event committed late is never
 * skipped by a cursor that has moved past its id.
 */
export const domainEvents = marketplaceSchema.table(
  'domain_events',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    txId: bigint('tx_id', { mode: 'number' })
      .notNull()
      .default(sql`(pg_current_xact_id()::text::bigint)`),
    type: text('type').notNull(),
    subjectType: text('subject_type').notNull(),
    subjectId: integer('subject_id').notNull(),
    // The user who made the move; null for the platform's timers.
    actorId: integer('actor_id'),
    payload: jsonb('payload').$type<Record<string, unknown>>().notNull(),
    occurredAt: timestamp('occurred_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('domain_events_order_idx').on(t.txId, t.id), index('domain_events_subject_idx').on(t.subjectType, t.subjectId)],
);

/** Where each consumer of the outbox has read up to. */
export const outboxCursors = marketplaceSchema.table('outbox_cursors', {
  consumer: text('consumer').primaryKey(),
  lastTxId: bigint('last_tx_id', { mode: 'number' }).notNull().default(0),
  lastEventId: bigint('last_event_id', { mode: 'number' }).notNull().default(0),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});

/** The platform's settings (DESIGN.md §6): one row per key, its value JSON. */
export const platformSettings = marketplaceSchema.table('platform_settings', {
  key: text('key').primaryKey(),
  value: jsonb('value').notNull(),
  updatedBy: integer('updated_by'),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});

export type DomainEvent = typeof domainEvents.$inferSelect;
