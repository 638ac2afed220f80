import { queryRows } from '@repo/db';
import { and, eq, gt, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { aiCache, aiCalls } from '../../db/schema/index.js';

/** A live cache entry, counting the hit. */
export async function takeCached(db: DbTx, feature: string, cacheKey: string) {
  const [row] = await db
    .update(aiCache)
    .set({ hits: sql`${aiCache.hits} + 1`, lastHitAt: sql`now()` })
    .where(and(eq(aiCache.feature, feature), eq(aiCache.cacheKey, cacheKey), gt(aiCache.expiresAt, sql`now()`)))
    .returning({ value: aiCache.value, model: aiCache.model });
  return row;
}

export async function storeCached(db: DbTx, entry: { feature: string; cacheKey: string; model: string; value: unknown; ttlHours: number }) {
  const expiresAt = sql`now() + make_interval(hours => ${entry.ttlHours})`;
  await db
    .insert(aiCache)
    .values({ feature: entry.feature, cacheKey: entry.cacheKey, model: entry.model, value: entry.value, expiresAt })
    .onConflictDoUpdate({
      target: [aiCache.feature, aiCache.cacheKey],
      set: { model: entry.model, value: entry.value, expiresAt, hits: 0, createdAt: sql`now()`, lastHitAt: null },
    });
}

export async function deleteCached(db: DbTx, feature: string, cacheKey: string) {
  const rows = await db
    .delete(aiCache)
    .where(and(eq(aiCache.feature, feature), eq(aiCache.cacheKey, cacheKey)))
    .returning({ key: aiCache.cacheKey });
  return rows.length === 1;
}

export async function recordCall(db: DbTx, call: typeof aiCalls.$inferInsert) {
  await db.insert(aiCalls).values(call);
}

export interface FeatureStats extends Record<string, unknown> {
  feature: string;
  calls: number;
  cached_calls: number;
  model_calls: number;
  builtin_calls: number;
  failures: number;
  avg_latency_ms: number;
  p95_latency_ms: number;
  prompt_tokens: number;
  completion_tokens: number;
}

/** Calls per feature in a period: from the cache, the model, the built-in fallback; failures, latency, tokens. */
export function featureStats(db: DbTx, from: Date, to: Date) {
  return queryRows<FeatureStats>(
    db,
    sql`select feature,
          count(*)::int as calls,
          count(*) filter (where cached)::int as cached_calls,
          count(*) filter (where not cached and model <> 'builtin')::int as model_calls,
          count(*) filter (where not cached and model = 'builtin')::int as builtin_calls,
          count(*) filter (where not success)::int as failures,
          coalesce(round(avg(latency_ms)), 0)::int as avg_latency_ms,
          coalesce(percentile_disc(0.95) within group (order by latency_ms), 0)::int as p95_latency_ms,
          coalesce(sum(prompt_tokens), 0)::int as prompt_tokens,
          coalesce(sum(completion_tokens), 0)::int as completion_tokens
        from ai_calls
        where created_at >= ${from.toISOString()}::timestamptz and created_at < ${to.toISOString()}::timestamptz
        group by feature
        order by feature`,
  );
}

export interface ModelStats extends Record<string, unknown> {
  model: string;
  calls: number;
  failures: number;
  prompt_tokens: number;
  completion_tokens: number;
}

export function modelStats(db: DbTx, from: Date, to: Date) {
  return queryRows<ModelStats>(
    db,
    sql`select model,
          count(*)::int as calls,
          count(*) filter (where not success)::int as failures,
          coalesce(sum(prompt_tokens), 0)::int as prompt_tokens,
          coalesce(sum(completion_tokens), 0)::int as completion_tokens
        from ai_calls
        where not cached and created_at >= ${from.toISOString()}::timestamptz and created_at < ${to.toISOString()}::timestamptz
        group by model
        order by calls desc, model`,
  );
}

export interface CacheStats extends Record<string, unknown> {
  feature: string;
  entries: number;
  live_entries: number;
  hits: number;
}

export function cacheStats(db: DbTx) {
  return queryRows<CacheStats>(
    db,
    sql`select feature,
          count(*)::int as entries,
          count(*) filter (where expires_at > now())::int as live_entries,
          coalesce(sum(hits), 0)::int as hits
        from ai_cache group by feature order by feature`,
  );
}

/** The most reused live entries, so an admin can find the key of an answer to clear. */
export function topCacheEntries(db: DbTx, limit: number) {
  return db
    .select({
      feature: aiCache.feature,
      cacheKey: aiCache.cacheKey,
      model: aiCache.model,
      hits: aiCache.hits,
      createdAt: aiCache.createdAt,
      expiresAt: aiCache.expiresAt,
    })
    .from(aiCache)
    .where(gt(aiCache.expiresAt, sql`now()`))
    .orderBy(sql`${aiCache.hits} desc`, sql`${aiCache.createdAt} desc`)
    .limit(limit);
}

/** The active catalogue, for matching a description against it. */
export function activeServices(db: DbTx) {
  return queryRows<{ id: number; slug: string; name: string; description: string | null; category: string }>(
    db,
    sql`select s.id, s.slug, s.name, s.description, c.name as category
        from services s join service_categories c on c.id = s.category_id
        where s.active
        order by c.position, s.position, s.id`,
  );
}
