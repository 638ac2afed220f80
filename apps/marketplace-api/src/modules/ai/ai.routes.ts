import type { FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses, messageEnvelope } from '@repo/schemas';
import { actorOf } from '../../lib/context.js';
import { DAY_MS } from '../../lib/time.js';
import { CacheParams, iso, StatsQuery, StatsResponse, SuggestBody, SuggestResponse } from './ai.schemas.js';
import type { AiService } from './ai.service.js';
import type { SuggestionsService } from './suggestions.service.js';

export function aiRoutes(deps: { ai: AiService; suggestions: SuggestionsService; modelName: string }): FastifyPluginAsyncZod {
  return async (app) => {
    const security = [{ bearerAuth: [] }];

    app.post(
      '/services/suggest',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'suggestServices',
          tags: ['catalogue'],
          summary: 'Suggest the services (and repair tasks of an identified vehicle) matching a problem description',
          security,
          body: SuggestBody,
          response: { 200: envelope(SuggestResponse), ...errorResponses(400, 401, 404, 422, 429) },
        },
      },
      async (request) => {
        const lang = request.body.lang ?? (request.headers['accept-language']?.toLowerCase().startsWith('en') ? 'en' : 'fr');
        return { data: await deps.suggestions.suggest(actorOf(request), { description: request.body.description, vehicle_id: request.body.vehicle_id, lang }) };
      },
    );

    app.get(
      '/admin/ai/stats',
      {
        onRequest: app.auth.requireRole('admin'),
        schema: {
          operationId: 'adminAiStats',
          tags: ['admin'],
          summary: 'AI usage: calls per feature and model, cache hits, failures, latency, tokens (default: the last 30 days)',
          security,
          querystring: StatsQuery,
          response: { 200: envelope(StatsResponse), ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const to = request.query.to ? new Date(request.query.to) : new Date();
        const from = request.query.from ? new Date(request.query.from) : new Date(to.getTime() - 30 * DAY_MS);
        const stats = await deps.ai.stats(from, to);
        return {
          data: {
            from: iso(from),
            to: iso(to),
            model: deps.modelName,
            features: stats.features.map((f) => ({ ...f, cache_hit_rate: f.calls ? Math.round((f.cached_calls / f.calls) * 1000) / 1000 : 0 })),
            models: stats.models,
            cache: {
              by_feature: stats.cache,
              top_entries: stats.top.map((e) => ({
                feature: e.feature,
                cache_key: e.cacheKey,
                model: e.model,
                hits: e.hits,
                created_at: iso(e.createdAt),
                expires_at: iso(e.expiresAt),
              })),
            },
          },
        };
      },
    );

    app.delete(
      '/admin/ai/cache/:feature/:cacheKey',
      {
        onRequest: app.auth.requireRole('admin'),
        schema: {
          operationId: 'adminClearAiCacheEntry',
          tags: ['admin'],
          summary: 'Clear one cached AI answer, so the next request asks again',
          security,
          params: CacheParams,
          response: { 200: messageEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        await deps.ai.clearCacheEntry(request.params.feature, request.params.cacheKey);
        return { message: 'AI cache entry cleared' };
      },
    );
  };
}
