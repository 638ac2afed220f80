import { sql } from 'drizzle-orm';
import { bigint, boolean, check, index, integer, jsonb, primaryKey, real, text, timestamp, type PgColumnBuilderBase } from 'drizzle-orm/pg-core';
import type { LogLevel } from './projects.js';
import { logtrackerSchema } from './pg-schema.js';

/**
 * Partitioned by day on `timestamp` (see migration 0003): expired days are dropped whole, and the
 * primary key includes the partition key as PostgreSQL requires. Rollup tables are kept by
 * statement-level triggers on every insert and delete, whatever path wrote the rows (migration
 * 0005).
 */
export const logs = logtrackerSchema.table(
  'logs',
  {
    id: bigint('id', { mode: 'number' }).generatedAlwaysAsIdentity(),
    // No foreign key: see lockedProject in logs.repository.ts and deleteProject.
    projectId: integer('project_id').notNull(),
    level: text('level').$type<LogLevel>().notNull(),
    message: text('message').notNull(),
    context: jsonb('context').$type<Record<string, unknown>>(),
    source: text('source'),
    // The time the entry says it happened (the submitted timestamp, or the time received).
    timestamp: timestamp('timestamp', { withTimezone: true }).notNull(),
    receivedAt: timestamp('received_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // The project last: a log is still found by its id alone through this index's prefix, and the
    // key carries the distribution column Citus requires of every key (infra/SCALING.md).
    primaryKey({ name: 'logs_pkey', columns: [t.id, t.timestamp, t.projectId] }),
    // Newest first within a project, with the id as tie-breaker for a stable order.
    index('logs_project_time_idx').on(t.projectId, t.timestamp.desc(), t.id.desc()),
    index('logs_project_level_time_idx').on(t.projectId, t.level, t.timestamp.desc(), t.id.desc()),
    // Case-insensitive substring search (ILIKE '%…%') is served by a GIN index of the message's
    // trigrams keyed by project (migration 0017, log_search_keys): one key per trigram within a word
    // of the message (pg_trgm's show_trgm), qualified by the project, so that a posting list names
    // one project's logs. The trigram index of the message alone (migration 0014) listed every
    // project's logs of the day under each trigram, and a search fetched and checked them all: 5 730
    // other projects' rows for the 26 matches of a small project's word in two days. The search
    // still checks the message itself (ILIKE) on the rows the keys find. The keys also hold the
    // hour the log was stamped in (migration 0019, log_hour_key), so that a search of a few hours
    // reads only their matches.
    index('logs_search_keys_idx').using('gin', sql`logtracker.log_search_keys(${t.projectId}, ${t.message}, ${t.timestamp})`),
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

/** The widths of rollup buckets: whole UTC minutes, hours and days. */
export const ROLLUP_GRAINS = ['minute', 'hour', 'day'] as const;
export type RollupGrain = (typeof ROLLUP_GRAINS)[number];

/**
 * How long rollup rows are kept, per grain (maintenance deletes older ones): minutes make the ends
 * of the 1h and 24h ranges and of their previous periods (two days back at most), hours and days
 * the 30d range and its previous period (sixty days), and the exact totals of lists (logs.counts.repository).
 */
export const ROLLUP_KEEP_DAYS: Record<RollupGrain, number> = { minute: 3, hour: 62, day: 62 };

function rollupColumns<T extends Record<string, PgColumnBuilderBase>>(key: T) {
  return {
    projectId: integer('project_id').notNull(),
    grain: text('grain').$type<RollupGrain>().notNull(),
    bucket: timestamp('bucket', { withTimezone: true }).notNull(),
    ...key,
    count: integer('count').notNull(),
    // Rows appended by the triggers are not yet merged with the other rows of their bucket; the
    // maintenance job merges the buckets that have any, found through a partial index.
    compacted: boolean('compacted').notNull().default(false),
  };
}

/**
 * Log counts per bucket and level, at every grain, appended by the insert/delete triggers
 * (negative on delete, one row per group of each statement, so concurrent batches never wait on
 * one another's rows) and compacted by the maintenance job. Statistics read these, never the
 * logs: a range costs the same for a thousand logs or a million, and it reads the coarsest
 * buckets that tile it (days, then hours and minutes at its ends).
 */
export const logLevelCounts = logtrackerSchema.table(
  'log_level_counts',
  rollupColumns({ level: text('level').$type<LogLevel>().notNull() }),
  (t) => [
    // Every column a statistics query reads, so that it reads the index alone.
    index('log_level_counts_idx').on(t.projectId, t.grain, t.bucket, t.level, t.count),
    index('log_level_counts_fresh_idx').on(t.projectId, t.grain, t.bucket).where(sql`not ${t.compacted}`),
    check('log_level_counts_grain_valid', sql`${t.grain} in ('minute', 'hour', 'day')`),
  ],
);

/**
 * The same per source, for the top sources. Levels and sources have rollups of their own: a
 * bucket holds four level rows and one row per source, where rows per level and source would
 * multiply the two, which is what a range's statistics would read.
 */
export const logSourceCounts = logtrackerSchema.table(
  'log_source_counts',
  rollupColumns({ source: text('source') }),
  (t) => [
    index('log_source_counts_idx').on(t.projectId, t.grain, t.bucket, t.source, t.count),
    index('log_source_counts_fresh_idx').on(t.projectId, t.grain, t.bucket).where(sql`not ${t.compacted}`),
    check('log_source_counts_grain_valid', sql`${t.grain} in ('minute', 'hour', 'day')`),
  ],
);

/**
 * The search keys (log_search_keys: a trigram of the message, qualified by the project) held by at
 * least SEARCH_COMMON_KEY_SHARE of a project's recent logs, with that share, as a sample of them
 * found it (log_search_refresh_common_keys, run after the partitions are analysed). A search looks
 * its text up by its other keys when it has some (log_search_rare_query_keys): the index checks
 * every match of the rarest key against each of the others, each check a descent of that key's
 * posting tree, and a key in a quarter of the logs cost as many page reads a match as the match
 * itself. The message is checked on every row the keys find, so a key left out never loses a match.
 */
export const logSearchCommonKeys = logtrackerSchema.table(
  'log_search_common_keys',
  {
    projectId: integer('project_id').notNull(),
    key: bigint('key', { mode: 'bigint' }).notNull(),
    share: real('share').notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.key] })],
);

/**
 * The ids each daily partition of logs holds, from the least to the greatest (`maxId` null: the
 * newest days, still receiving logs, open above), as the maintenance pass last read them
 * (log_partition_ids_refresh). A log looked up by id (log_for_member) is probed first in the
 * partitions whose range holds its id, and in every partition only when none has it: a hint, which
 * a stale range (a late log of an old day, a partition emptied since) only makes slower.
 */
export const logPartitionIds = logtrackerSchema.table('log_partition_ids', {
  day: timestamp('day', { withTimezone: true }).primaryKey(),
  minId: bigint('min_id', { mode: 'number' }).notNull(),
  maxId: bigint('max_id', { mode: 'number' }),
});
