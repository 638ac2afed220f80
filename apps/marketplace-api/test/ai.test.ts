import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiCalls, serviceCategories, services } from '../src/db/schema/index.js';
import { startChatServer } from './ai-server.js';
import { bearer, buildTestApp, createAdmin, createClient, expectError, type TestApp } from './helpers.js';

interface Suggestion {
  services: { id: number; name: string; category: string; confidence: number }[];
  tasks: { code: string }[];
  explanation: string;
  ai: { source: 'model' | 'builtin'; cached: boolean; cache_key: string };
}

interface Stats {
  model: string;
  features: { feature: string; calls: number; cached_calls: number; model_calls: number; builtin_calls: number; failures: number; prompt_tokens: number; completion_tokens: number; cache_hit_rate: number }[];
  models: { model: string; calls: number; failures: number }[];
  cache: { by_feature: { feature: string; entries: number; hits: number }[]; top_entries: { cache_key: string; hits: number }[] };
}

/** A small catalogue, as the seed would make it. */
async function seedCatalogue(t: TestApp) {
  const [brakes, comfort, upkeep] = await t.database.db
    .insert(serviceCategories)
    .values([
      { slug: 'freinage', name: 'Freinage', position: 1 },
      { slug: 'climatisation', name: 'Climatisation', position: 2 },
      { slug: 'entretien', name: 'Entretien', position: 3 },
    ])
    .returning();
  const rows = await t.database.db
    .insert(services)
    .values([
      { categoryId: brakes!.id, slug: 'plaquettes-avant', name: 'Remplacement des plaquettes de frein avant', description: 'Plaquettes et contrôle des disques', durationMinutes: 60, priceCents: 9000 },
      { categoryId: comfort!.id, slug: 'recharge-clim', name: 'Recharge de climatisation', description: 'Recharge du gaz et contrôle d’étanchéité', durationMinutes: 45, priceCents: 7000 },
      { categoryId: upkeep!.id, slug: 'vidange', name: 'Vidange et filtre à huile', description: 'Huile moteur et filtre', durationMinutes: 40, priceCents: 8000 },
    ])
    .returning();
  return { brakes: rows[0]!, clim: rows[1]!, oil: rows[2]! };
}

function suggest(t: TestApp, token: string, payload: Record<string, unknown>) {
  return t.app.inject({ method: 'POST', url: '/api/v1/services/suggest', headers: bearer(token), payload });
}

describe('AI layer without a model (built-in matching)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(() => t.close());

  it('matches a description to the catalogue, caches the answer and counts the hit', async () => {
    const catalogue = await seedCatalogue(t);
    const client = await createClient(t);
    const first = await suggest(t, client.token, { description: 'Mes freins grincent quand je freine en descente', lang: 'fr' });
    expect(first.statusCode, first.body).toBe(200);
    const a = (first.json() as { data: Suggestion }).data;
    expect(a.services[0]).toMatchObject({ id: catalogue.brakes.id, category: 'Freinage' });
    expect(a.services.map((s) => s.id)).not.toContain(catalogue.clim.id);
    expect(a.ai).toMatchObject({ source: 'builtin', cached: false });
    expect(a.explanation).toMatch(/Suggestions/);

    const again = (await suggest(t, client.token, { description: 'Mes  freins grincent quand je freine en descente', lang: 'fr' })).json() as { data: Suggestion };
    expect(again.data.ai).toEqual({ ...a.ai, cached: true });
    expect(again.data.services).toEqual(a.services);

    const english = (await suggest(t, client.token, { description: 'The air conditioning blows warm air', lang: 'en' })).json() as { data: Suggestion };
    expect(english.data.services[0]!.id).toBe(catalogue.clim.id);

    const none = (await suggest(t, client.token, { description: 'Quelque chose de bizarre se passe', lang: 'fr' })).json() as { data: Suggestion };
    expect(none.data.services).toEqual([]);
    expect(none.data.explanation).toMatch(/diagnostic/);

    const admin = await createAdmin(t);
    const stats = (await t.app.inject({ method: 'GET', url: '/api/v1/admin/ai/stats', headers: bearer(admin.token) })).json() as { data: Stats };
    expect(stats.data.model).toBe('builtin');
    expect(stats.data.features).toEqual([
      expect.objectContaining({ feature: 'service_suggestion', calls: 4, cached_calls: 1, builtin_calls: 3, model_calls: 0, failures: 0, cache_hit_rate: 0.25 }),
    ]);
    expect(stats.data.cache.by_feature).toEqual([expect.objectContaining({ feature: 'service_suggestion', entries: 3, hits: 1 })]);
    expect(stats.data.cache.top_entries[0]).toMatchObject({ cache_key: a.ai.cache_key, hits: 1 });
  });

  it('validates the request and hides other clients’ vehicles', async () => {
    const client = await createClient(t);
    const body = expectError(await suggest(t, client.token, { description: 'court' }), 422, 'validation_error');
    expect(body.errors).toHaveProperty('description');
    expectError(await suggest(t, client.token, { description: 'Mes freins grincent très fort', vehicle_id: 999_999 }), 404, 'not_found');
    expectError(await t.app.inject({ method: 'POST', url: '/api/v1/services/suggest', payload: { description: 'Mes freins grincent' } }), 401, 'unauthenticated');
  });

  it('keeps the admin routes for admins and checks the cache key', async () => {
    const client = await createClient(t);
    const admin = await createAdmin(t);
    expectError(await t.app.inject({ method: 'GET', url: '/api/v1/admin/ai/stats', headers: bearer(client.token) }), 403, 'forbidden');
    expectError(await t.app.inject({ method: 'GET', url: '/api/v1/admin/ai/stats' }), 401, 'unauthenticated');
    expectError(await t.app.inject({ method: 'GET', url: '/api/v1/admin/ai/stats?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z', headers: bearer(admin.token) }), 422, 'validation_error');
    const key = 'a'.repeat(40);
    expectError(await t.app.inject({ method: 'DELETE', url: `/api/v1/admin/ai/cache/service_suggestion/${key}`, headers: bearer(client.token) }), 403, 'forbidden');
    expectError(await t.app.inject({ method: 'DELETE', url: `/api/v1/admin/ai/cache/service_suggestion/${key}`, headers: bearer(admin.token) }), 404, 'not_found');
    expectError(await t.app.inject({ method: 'DELETE', url: '/api/v1/admin/ai/cache/service_suggestion/not-a-key', headers: bearer(admin.token) }), 422, 'validation_error');
    expectError(await t.app.inject({ method: 'DELETE', url: `/api/v1/admin/ai/cache/horoscope/${key}`, headers: bearer(admin.token) }), 422, 'validation_error');
  });
});

describe('AI layer with an OpenAI-compatible model', () => {
  let t: TestApp;
  let server: Awaited<ReturnType<typeof startChatServer>>;
  let catalogue: Awaited<ReturnType<typeof seedCatalogue>>;
  beforeAll(async () => {
    server = await startChatServer((request) => {
      const user = request.messages.find((m) => m.role === 'user')!.content;
      if (user.includes('surcharge')) return { status: 503 };
      if (user.includes('lenteur')) return { hang: true };
      if (user.includes('inventé')) return { content: JSON.stringify({ service_ids: [987654], explanation: 'Made up' }) };
      if (user.includes('bavard')) return { content: 'Sure! Here is what I think…' };
      const clim = /Recharge de climatisation/.exec(request.messages[0]!.content) ? catalogue.clim.id : 0;
      return { content: JSON.stringify({ service_ids: [clim], task_codes: [], explanation: 'La climatisation doit être rechargée.' }) };
    });
    t = await buildTestApp({ AI_API_URL: server.url, AI_API_KEY: 'sk-local-test', AI_MODEL: 'mini-model', AI_TIMEOUT_MS: '300' });
    catalogue = await seedCatalogue(t);
  });
  afterAll(async () => {
    await t.close();
    await server.close();
  });

  it('asks the model once, then answers from the cache until the entry is cleared', async () => {
    const client = await createClient(t);
    const admin = await createAdmin(t);
    const description = 'La clim ne fait plus de froid depuis cet été';
    const first = (await suggest(t, client.token, { description, lang: 'fr' })).json() as { data: Suggestion };
    expect(first.data).toMatchObject({ services: [{ id: catalogue.clim.id }], explanation: 'La climatisation doit être rechargée.', ai: { source: 'model', cached: false } });
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]).toMatchObject({ model: 'mini-model', authorization: 'Bearer sk-local-test', response_format: { type: 'json_object' } });
    expect(server.requests[0]!.messages[0]!.content).toContain(`${catalogue.brakes.id}: Remplacement des plaquettes de frein avant (Freinage)`);

    const second = (await suggest(t, client.token, { description, lang: 'fr' })).json() as { data: Suggestion };
    expect(second.data.ai).toEqual({ ...first.data.ai, source: 'model', cached: true });
    expect(server.requests).toHaveLength(1);

    const cleared = await t.app.inject({ method: 'DELETE', url: `/api/v1/admin/ai/cache/service_suggestion/${first.data.ai.cache_key}`, headers: bearer(admin.token) });
    expect(cleared.json()).toEqual({ message: 'AI cache entry cleared' });
    const third = (await suggest(t, client.token, { description, lang: 'fr' })).json() as { data: Suggestion };
    expect(third.data.ai.cached).toBe(false);
    expect(server.requests).toHaveLength(2);

    const calls = await t.database.db.select().from(aiCalls);
    expect(calls.filter((c) => !c.cached)[0]).toMatchObject({ feature: 'service_suggestion', model: 'mini-model-2026-01-01', success: true, promptTokens: 321, completionTokens: 45 });
  });

  it('falls back to the built-in answer when the model fails, times out or answers nonsense, without caching it', async () => {
    const client = await createClient(t);
    for (const description of ['Freins en surcharge, ils grincent', 'Freins qui grincent, lenteur', 'Freins qui grincent, service inventé', 'Freins qui grincent, modèle bavard']) {
      const before = server.requests.length;
      const res = (await suggest(t, client.token, { description, lang: 'fr' })).json() as { data: Suggestion };
      expect(res.data.ai).toMatchObject({ source: 'builtin', cached: false });
      expect(res.data.services[0]!.id).toBe(catalogue.brakes.id);
      // Not cached: the model is asked again next time.
      await suggest(t, client.token, { description, lang: 'fr' });
      expect(server.requests.length).toBe(before + 2);
    }
    const admin = await createAdmin(t);
    const stats = (await t.app.inject({ method: 'GET', url: '/api/v1/admin/ai/stats', headers: bearer(admin.token) })).json() as { data: Stats };
    expect(stats.data.model).toBe('mini-model');
    const feature = stats.data.features.find((f) => f.feature === 'service_suggestion')!;
    expect(feature.failures).toBe(8);
    expect(feature.prompt_tokens).toBeGreaterThanOrEqual(642);
    expect(stats.data.models).toEqual(expect.arrayContaining([expect.objectContaining({ model: 'mini-model', failures: 8 })]));
  });
});
