import { sql } from 'drizzle-orm';
import { bigint, check, index, integer, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { projects, type LogLevel } from './projects.js';

/**
 * Partitioned by day on `timestamp` (see migration 0003): expired days are dropped whole, and the
 * primary key includes the partition key as PostgreSQL requires. Rollup tables are kept by
 * statement-level triggers on every insert and delete, whatever path wrote the rows.
 */
export const logs = pgTable(
  'logs',
  {
    id: bigint('id', { mode: 'number' }).generatedAlwaysAsIdentity(),
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
    primaryKey({ name: 'logs_pkey', columns: [t.id, t.timestamp] }),
    // Newest first within a project, with the id as tie-breaker for a stable order.
    index('logs_project_time_idx').on(t.projectId, t.timestamp.desc(), t.id.desc()),
    index('logs_project_level_time_idx').on(t.projectId, t.level, t.timestamp.desc(), t.id.desc()),
    index('logs_project_pattern_time_idx')
      .on(t.projectId, t.patternId, t.timestamp.desc(), t.id.desc())
      .where(sql`${t.patternId} is not null`),
    // Case-insensitive substring search (ILIKE '%…%') is served by a trigram index that also
    // holds the project (btree_gin), so a search reads only the matches of its project: a word
    // common in other projects costs nothing here.
    index('logs_project_message_trgm_idx').using('gin', t.projectId, sql`${t.message} gin_trgm_ops`),
    check('logs_level_valid', sql`${t.level} in ('error', 'warning', 'info', 'debug')`),
  ],
);

/**
 * Newest first, the order of the (…, timestamp, id) indexes. drizzle-kit wrote those indexes as
 * DESC NULLS LAST, while a plain `order by … desc` means NULLS FIRST: no index matched it, and
 * PostgreSQL sorted every log of the project to answer a page. The columns are NOT NULL, so
 * spelling the index's null order changes no result; every newest-first query uses this.
 */
export const newestFirst = [sql`${logs.timestamp} desc nulls last`, sql`${logs.id} desc nulls last`] as const;

/** Oldest first: the same indexes read backwards (ASC NULLS FIRST), for the same reason. */
export const oldestFirst = [sql`${logs.timestamp} asc nulls first`, sql`${logs.id} asc nulls first`] as const;

export type Log = typeof logs.$inferSelect;
export type NewLog = typeof logs.$inferInsert;

const rollupColumns = {
  projectId: integer('project_id').notNull(),
  bucket: timestamp('bucket', { withTimezone: true }).notNull(),
  level: text('level').$type<LogLevel>().notNull(),
  source: text('source'),
  count: integer('count').notNull(),
};

/**
 * Log counts per minute, level and source, appended by the insert/delete triggers (negative on
 * delete) and compacted by the maintenance job: statistics read these, never the logs.
 */
export const logCountsMinute = pgTable('log_counts_minute', rollupColumns, (t) => [
  index('log_counts_minute_idx').on(t.projectId, t.bucket),
]);

/** The same per hour, for the week and month ranges. */
export const logCountsHour = pgTable('log_counts_hour', rollupColumns, (t) => [
  index('log_counts_hour_idx').on(t.projectId, t.bucket),
]);
