import { sql } from 'drizzle-orm';
import { bigint, check, index, integer, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { timestamps } from './columns.js';
import { appointments, serviceRequests } from './booking.js';
import { users } from './users.js';
import { marketplaceSchema } from './pg-schema.js';

export const DISPUTE_STATUSES = ['none', 'open', 'resolved'] as const;
export type DisputeStatus = (typeof DISPUTE_STATUSES)[number];

/**
 * A conversation between a client and a prestataire, optionally about one of their requests or
 * appointments; one per pair and subject. Either party may report a dispute on it (`none` → `open`),
 * an administrator resolves it (`resolved`, a note and where decided a refund for the payments module).
 */
export const conversations = marketplaceSchema.table(
  'conversations',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    clientId: integer('client_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    prestataireId: integer('prestataire_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    serviceRequestId: integer('service_request_id').references(() => serviceRequests.id, { onDelete: 'set null' }),
    appointmentId: integer('appointment_id').references(() => appointments.id, { onDelete: 'set null' }),
    disputeStatus: text('dispute_status').$type<DisputeStatus>().notNull().default('none'),
    disputeReason: text('dispute_reason'),
    disputeReportedBy: integer('dispute_reported_by').references(() => users.id, { onDelete: 'set null' }),
    disputeReportedAt: timestamp('dispute_reported_at', { withTimezone: true }),
    disputeResolutionNote: text('dispute_resolution_note'),
    disputeRefundCents: integer('dispute_refund_cents'),
    disputeResolvedBy: integer('dispute_resolved_by').references(() => users.id, { onDelete: 'set null' }),
    disputeResolvedAt: timestamp('dispute_resolved_at', { withTimezone: true }),
    lastMessageAt: timestamp('last_message_at', { withTimezone: true }),
    ...timestamps,
  },
  (t) => [
    // One conversation per pair and subject; a missing subject counts as one subject of its own.
    uniqueIndex('conversations_pair_subject_unique').on(
      t.clientId,
      t.prestataireId,
      sql`coalesce(${t.serviceRequestId}, 0)`,
      sql`coalesce(${t.appointmentId}, 0)`,
    ),
    index('conversations_client_idx').on(t.clientId, t.updatedAt.desc()),
    index('conversations_prestataire_idx').on(t.prestataireId, t.updatedAt.desc()),
    index('conversations_disputes_idx').on(t.disputeStatus, t.disputeReportedAt).where(sql`${t.disputeStatus} <> 'none'`),
    check('conversations_dispute_status_valid', sql`${t.disputeStatus} in ('none', 'open', 'resolved')`),
    check('conversations_refund_nonnegative', sql`${t.disputeRefundCents} is null or ${t.disputeRefundCents} >= 0`),
  ],
);

/** A text message of a conversation; `read_at` is when the other party read it. */
export const conversationMessages = marketplaceSchema.table(
  'conversation_messages',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    conversationId: integer('conversation_id')
      .notNull()
      .references(() => conversations.id, { onDelete: 'cascade' }),
    senderId: integer('sender_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    body: text('body').notNull(),
    readAt: timestamp('read_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('conversation_messages_conversation_idx').on(t.conversationId, t.id.desc()),
    // Unread counts: the messages of a conversation nobody has read yet.
    index('conversation_messages_unread_idx').on(t.conversationId, t.senderId).where(sql`${t.readAt} is null`),
  ],
);

export type Conversation = typeof conversations.$inferSelect;
export type ConversationMessage = typeof conversationMessages.$inferSelect;
