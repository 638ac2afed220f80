import { index, integer, jsonb, text, timestamp } from 'drizzle-orm/pg-core';
import { marketplaceSchema } from './pg-schema.js';

/**
 * Answers of the repair-data vendor, which bills per call. The key is the operation and its
 * arguments; `value` is the answer as JSON, SQL NULL when the vendor answered "not found" (also
 * worth remembering). Expired rows are refreshed on the next call and purged from time to time.
 */
export const repairdataCache = marketplaceSchema.table(
  'repairdata_cache',
  {
    key: text('key').primaryKey(),
    value: jsonb('value'),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    hits: integer('hits').notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('repairdata_cache_expires_idx').on(t.expiresAt)],
);

export type RepairdataCacheEntry = typeof repairdataCache.$inferSelect;
