import { sql } from 'drizzle-orm';
import { bigint, check, index, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { projects, type LogLevel } from './projects.js';

export const logs = pgTable(
  'logs',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    projectId: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    level: text('level').$type<LogLevel>().notNull(),
    message: text('message').notNull(),
    context: jsonb('context').$type<Record<string, unknown>>(),
    source: text('source'),
    // The time the entry says it happened (the submitted timestamp, or the time received).
    timestamp: timestamp('timestamp', { withTimezone: true }).notNull(),
    receivedAt: timestamp('received_at', { withTimezone: true }).notNull().defaultNow(),
    // Set by the analysis: the mined pattern (patterns.id) this message belongs to.
    patternId: integer('pattern_id'),
  },
  (t) => [
    // Newest first within a project, with the id as tie-breaker for a stable order.
    index('logs_project_time_idx').on(t.projectId, t.timestamp.desc(), t.id.desc()),
    index('logs_project_level_time_idx').on(t.projectId, t.level, t.timestamp.desc(), t.id.desc()),
    // Case-insensitive substring search (ILIKE '%…%') is served by a trigram index.
    index('logs_project_pattern_time_idx')
      .on(t.projectId, t.patternId, t.timestamp.desc(), t.id.desc())
      .where(sql`${t.patternId} is not null`),
    index('logs_message_trgm_idx').using('gin', sql`${t.message} gin_trgm_ops`),
    check('logs_level_valid', sql`${t.level} in ('error', 'warning', 'info', 'debug')`),
  ],
);

export type Log = typeof logs.$inferSelect;
export type NewLog = typeof logs.$inferInsert;
