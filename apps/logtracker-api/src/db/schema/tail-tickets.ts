import { index, integer, text, timestamp } from 'drizzle-orm/pg-core';
import { projects } from './projects.js';
import { sessions, users } from './users.js';
import { logtrackerSchema } from './pg-schema.js';

/**
 * Single-use tickets that open a live tail from a browser, whose WebSocket cannot send an
 * Authorization header: a URL holding one is worth nothing once used or 30 seconds old. Only the
 * SHA-256 of a ticket is stored, in the database rather than in an instance's memory, so that the
 * upgrade may reach any instance. A ticket goes with its user, session and project.
 */
export const tailTickets = logtrackerSchema.table(
  'tail_tickets',
  {
    ticketHash: text('ticket_hash').primaryKey(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    sessionId: text('session_id')
      .notNull()
      .references(() => sessions.id, { onDelete: 'cascade' }),
    projectId: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  // Expired tickets are deleted by range as new ones are issued.
  (t) => [index('tail_tickets_expires_at_idx').on(t.expiresAt)],
);
