import { iso, storableText, UNSTORABLE_TEXT_MESSAGE, timestamp } from '@repo/schemas';
import { z } from 'zod';
import { LANGS } from '../../db/schema/index.js';
import { AI_FEATURES } from './ai.service.js';

export const SuggestBody = z.object({
  description: z.string().trim().min(10).max(2000).refine(storableText, UNSTORABLE_TEXT_MESSAGE),
  vehicle_id: z.number().int().min(1).max(2_147_483_647).optional(),
  lang: z.enum(LANGS).optional(),
});

export const AiMeta = z.object({ source: z.enum(['model', 'builtin']), cached: z.boolean(), cache_key: z.string() });

export const SuggestResponse = z.object({
  services: z.array(z.object({ id: z.number().int(), slug: z.string(), name: z.string(), category: z.string(), confidence: z.number() })),
  tasks: z.array(z.object({ code: z.string(), name: z.string(), system_code: z.string() })),
  explanation: z.string(),
  ai: AiMeta,
});

export const StatsQuery = z
  .object({
    from: z.iso.datetime({ offset: true }).optional(),
    to: z.iso.datetime({ offset: true }).optional(),
  })
  .refine((q) => !q.from || !q.to || new Date(q.from) < new Date(q.to), { message: 'from must be before to', path: ['from'] });

export const StatsResponse = z.object({
  from: timestamp,
  to: timestamp,
  model: z.string(),
  features: z.array(
    z.object({
      feature: z.string(),
      calls: z.number().int(),
      cached_calls: z.number().int(),
      cache_hit_rate: z.number(),
      model_calls: z.number().int(),
      builtin_calls: z.number().int(),
      failures: z.number().int(),
      avg_latency_ms: z.number().int(),
      p95_latency_ms: z.number().int(),
      prompt_tokens: z.number().int(),
      completion_tokens: z.number().int(),
    }),
  ),
  models: z.array(
    z.object({ model: z.string(), calls: z.number().int(), failures: z.number().int(), prompt_tokens: z.number().int(), completion_tokens: z.number().int() }),
  ),
  cache: z.object({
    by_feature: z.array(z.object({ feature: z.string(), entries: z.number().int(), live_entries: z.number().int(), hits: z.number().int() })),
    top_entries: z.array(
      z.object({ feature: z.string(), cache_key: z.string(), model: z.string(), hits: z.number().int(), created_at: timestamp, expires_at: timestamp }),
    ),
  }),
});

export const CacheParams = z.object({
  feature: z.enum(AI_FEATURES),
  cacheKey: z.string().regex(/^[0-9a-f]{40}$/, 'Must be a cache key (40 hexadecimal characters)'),
});

export { iso };
