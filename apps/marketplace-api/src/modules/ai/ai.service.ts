import { createHash } from 'node:crypto';
import type { ChatMessage, ChatModel } from '@repo/ai';
import { AppError } from '@repo/http';
import type { FastifyBaseLogger } from 'fastify';
import type { DbTx } from '../../db/index.js';
import * as repo from './ai.repository.js';

export const AI_FEATURES = ['service_suggestion', 'estimate_explanation'] as const;
export type AiFeature = (typeof AI_FEATURES)[number];

export interface AiAnswer<T> {
  value: T;
  /** `model` when the configured model answered (now or in the cached answer), `builtin` otherwise. */
  source: 'model' | 'builtin';
  cached: boolean;
  cacheKey: string;
}

export interface AiTask<T> {
  feature: AiFeature;
  /** What identifies the question: the same input gives the same cached answer. */
  input: unknown;
  /** The prompt for the model. */
  messages: ChatMessage[];
  json: boolean;
  maxTokens: number;
  /** Turns the model's text into the answer; throws when the answer is unusable (then the fallback answers). */
  parse(text: string): T;
  /** The deterministic answer. */
  fallback(): T | Promise<T>;
}

/**
 * Every AI answer goes through here: the cache first (by feature and a hash of model + input),
 * then the model when one is configured, the built-in answer otherwise or when the model fails.
 * Each request is recorded (feature, model, tokens, latency, cached, success) for the admin stats.
 * A fallback given because the model failed is not cached, so the model is asked again next time.
 */
export function createAiService(deps: {
  db: DbTx;
  model?: ChatModel;
  cacheTtlHours: number;
  log: Pick<FastifyBaseLogger, 'warn'>;
}) {
  const { db, model } = deps;
  const modelName = model?.model ?? 'builtin';

  function keyOf(input: unknown): string {
    return createHash('sha256').update(`${modelName}\n${JSON.stringify(input)}`).digest('hex').slice(0, 40);
  }

  return {
    configured: Boolean(model),

    async run<T>(task: AiTask<T>): Promise<AiAnswer<T>> {
      const cacheKey = keyOf(task.input);
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);

      const hit = await repo.takeCached(db, task.feature, cacheKey);
      if (hit) {
        await repo.recordCall(db, { feature: task.feature, model: hit.model, cached: true, success: true, latencyMs: elapsed() });
        return { value: hit.value as T, source: hit.model === 'builtin' ? 'builtin' : 'model', cached: true, cacheKey };
      }

      if (model) {
        try {
          const completion = await model.complete(task.messages, { json: task.json, maxTokens: task.maxTokens });
          const value = task.parse(completion.text);
          await repo.storeCached(db, { feature: task.feature, cacheKey, model: modelName, value, ttlHours: deps.cacheTtlHours });
          await repo.recordCall(db, {
            feature: task.feature,
            model: completion.model,
            cached: false,
            success: true,
            promptTokens: completion.promptTokens,
            completionTokens: completion.completionTokens,
            latencyMs: elapsed(),
          });
          return { value, source: 'model', cached: false, cacheKey };
        } catch (error) {
          deps.log.warn({ err: error, feature: task.feature }, 'AI model unavailable; answering with the built-in method');
          await repo.recordCall(db, {
            feature: task.feature,
            model: modelName,
            cached: false,
            success: false,
            latencyMs: elapsed(),
            error: (error instanceof Error ? error.message : String(error)).slice(0, 500),
          });
          return { value: await task.fallback(), source: 'builtin', cached: false, cacheKey };
        }
      }

      const value = await task.fallback();
      await repo.storeCached(db, { feature: task.feature, cacheKey, model: 'builtin', value, ttlHours: deps.cacheTtlHours });
      await repo.recordCall(db, { feature: task.feature, model: 'builtin', cached: false, success: true, latencyMs: elapsed() });
      return { value, source: 'builtin', cached: false, cacheKey };
    },

    async stats(from: Date, to: Date) {
      const [features, models, cache, top] = await Promise.all([
        repo.featureStats(db, from, to),
        repo.modelStats(db, from, to),
        repo.cacheStats(db),
        repo.topCacheEntries(db, 20),
      ]);
      return { features, models, cache, top };
    },

    async clearCacheEntry(feature: string, cacheKey: string) {
      if (!(await repo.deleteCached(db, feature, cacheKey))) throw AppError.notFound('AI cache entry');
    },
  };
}

export type AiService = ReturnType<typeof createAiService>;
