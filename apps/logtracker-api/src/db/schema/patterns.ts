import { bigint, index, integer, jsonb, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { projects, type LogLevel } from './projects.js';
import { users } from './users.js';
import { logtrackerSchema } from './pg-schema.js';

/** A log template mined from a project's messages; `cluster_id` is the miner's stable id. */
export const patterns = logtrackerSchema.table(
  'patterns',
  {
    id: integer('id').generatedAlwaysAsIdentity(),
    projectId: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    clusterId: integer('cluster_id').notNull(),
    template: text('template').notNull(),
    count: bigint('count', { mode: 'number' }).notNull().default(0),
    levels: jsonb('levels').$type<LogLevel[]>().notNull().default([]),
    firstSeen: timestamp('first_seen', { withTimezone: true }),
    lastSeen: timestamp('last_seen', { withTimezone: true }),
    sample: text('sample'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // The project in the key as in every key of the tables distributed by project (infra/SCALING.md).
    primaryKey({ name: 'patterns_pkey', columns: [t.id, t.projectId] }),
    uniqueIndex('patterns_project_cluster_unique').on(t.projectId, t.clusterId),
  ],
);

/**
 * The pattern of each mined log, beside the log rather than in it: tagging a million logs writes a
 * million narrow rows here, where updating them in the logs table rewrote every row and every
 * index entry of it (the trigram index above all), several times slower. Keyed by the log's time
 * and id within its project, as the logs' own index orders them: mining goes in that order, so the
 * key grows at its end and a page of logs finds its tags in one stretch of it; expired tags are a
 * prefix of the project's. With the log's level; rows go with their logs (retention, project
 * deletion).
 */
export const logPatterns = logtrackerSchema.table(
  'log_patterns',
  {
    projectId: integer('project_id').notNull(),
    timestamp: timestamp('timestamp', { withTimezone: true }).notNull(),
    logId: bigint('log_id', { mode: 'number' }).notNull(),
    level: text('level').$type<LogLevel>().notNull(),
    patternId: integer('pattern_id').notNull(),
  },
  (t) => [
    primaryKey({ name: 'log_patterns_pkey', columns: [t.projectId, t.timestamp, t.logId] }),
    index('log_patterns_pattern_time_idx').on(t.projectId, t.patternId, t.timestamp.desc(), t.logId.desc()),
  ],
);

/** The template miner's state per project, so that mining resumes where it stopped. */
export const minerStates = logtrackerSchema.table('miner_states', {
  projectId: integer('project_id')
    .primaryKey()
    .references(() => projects.id, { onDelete: 'cascade' }),
  state: jsonb('state').notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});

/** One run of the analysis: its request and the facts it found. */
export const analyses = logtrackerSchema.table(
  'analyses',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    projectId: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    requestedBy: integer('requested_by').references(() => users.id, { onDelete: 'set null' }),
    timeRange: text('time_range').notNull(),
    logLevels: jsonb('log_levels').$type<LogLevel[]>().notNull(),
    focusAreas: jsonb('focus_areas').$type<string[]>().notNull(),
    rangeFrom: timestamp('range_from', { withTimezone: true }).notNull(),
    rangeTo: timestamp('range_to', { withTimezone: true }).notNull(),
    result: jsonb('result').$type<Record<string, unknown>>().notNull(),
    summary: text('summary').notNull(),
    narrative: text('narrative'),
    aiModel: text('ai_model'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('analyses_project_created_idx').on(t.projectId, t.createdAt.desc())],
);
