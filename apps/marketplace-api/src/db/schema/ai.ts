import { bigint, boolean, index, integer, jsonb, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { marketplaceSchema } from './pg-schema.js';

/** Answers of the AI layer by feature and input key, reused until they expire. */
export const aiCache = marketplaceSchema.table(
  'ai_cache',
  {
    feature: text('feature').notNull(),
    cacheKey: text('cache_key').notNull(),
    model: text('model').notNull(),
    value: jsonb('value').$type<unknown>().notNull(),
    hits: integer('hits').notNull().default(0),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    lastHitAt: timestamp('last_hit_at', { withTimezone: true }),
  },
  (t) => [primaryKey({ columns: [t.feature, t.cacheKey] }), index('ai_cache_expires_idx').on(t.expiresAt)],
);

/** Every request the AI layer answered: from the cache, the model, or the built-in fallback. */
export const aiCalls = marketplaceSchema.table(
  'ai_calls',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    feature: text('feature').notNull(),
    model: text('model').notNull(),
    cached: boolean('cached').notNull(),
    success: boolean('success').notNull(),
    promptTokens: integer('prompt_tokens'),
    completionTokens: integer('completion_tokens'),
    latencyMs: integer('latency_ms').notNull(),
    error: text('error'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('ai_calls_feature_created_idx').on(t.feature, t.createdAt)],
);
