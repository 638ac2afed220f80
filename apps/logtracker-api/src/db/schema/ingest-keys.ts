import { index, integer, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { projects } from './projects.js';
import { users } from './users.js';
import { logtrackerSchema } from './pg-schema.js';

/**
 * Ingest-only credentials for CI pipelines and agents. Only the SHA-256 of a key is stored; the
 * key itself is shown once, at creation.
 */
export const ingestKeys = logtrackerSchema.table(
  'ingest_keys',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    projectId: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    prefix: text('prefix').notNull(),
    keyHash: text('key_hash').notNull(),
    createdBy: integer('created_by').references(() => users.id, { onDelete: 'set null' }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
  },
  (t) => [uniqueIndex('ingest_keys_hash_unique').on(t.keyHash), index('ingest_keys_project_idx').on(t.projectId)],
);

export type IngestKey = typeof ingestKeys.$inferSelect;
