import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cities, tariffGrids, users } from '../src/db/schema/index.js';
import { startChatServer } from './ai-server.js';
import { bearer, buildTestApp, createClient, createPrestataire, expectError, type TestApp } from './helpers.js';

interface Estimate {
  vehicle: { id: string; category: string };
  lines: { task_code: string; name: string; hours: number; labour_cents: number }[];
  total_hours: number;
  labour_total_cents: number;
  currency: string;
  rate: { hourly_rate_cents: number; source: string; tariff_grid_id: number | null };
  explanation: string | null;
  ai: { source: string; cached: boolean } | null;
}

function estimate(t: TestApp, token: string, payload: Record<string, unknown>) {
  return t.app.inject({ method: 'POST', url: '/api/v1/prestataire/labor/estimate', headers: bearer(token), payload });
}

describe('labour estimates with the bundled repair data', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(() => t.close());

  it("prices each task at the prestataire's own hourly rate", async () => {
    const garage = await createPrestataire(t, { status: 'validated', profile: { hourlyRateCents: 7200 } });
    const res = await estimate(t, garage.token, { plate: 'AB-123-CD', task_codes: ['spark_plugs', 'oil_filter_change'] });
    expect(res.statusCode, res.body).toBe(200);
    const body = (res.json() as { data: Estimate }).data;
    expect(body).toMatchObject({
      vehicle: { id: 'renault-clio-5-tce100', category: 'city' },
      lines: [
        { task_code: 'spark_plugs', hours: 0.6, labour_cents: 4320 },
        { task_code: 'oil_filter_change', hours: 0.5, labour_cents: 3600 },
      ],
      total_hours: 1.1,
      labour_total_cents: 7920,
      currency: 'EUR',
      rate: { hourly_rate_cents: 7200, source: 'profile', tariff_grid_id: null },
      explanation: null,
      ai: null,
    });
    // A rate given for this quote wins.
    const quoted = (await estimate(t, garage.token, { repairdata_vehicle_id: 'renault-clio-5-tce100', task_codes: ['oil_filter_change'], hourly_rate_cents: 10_000 })).json() as { data: Estimate };
    expect(quoted.data.rate).toEqual({ hourly_rate_cents: 10_000, source: 'quote', tariff_grid_id: null });
    expect(quoted.data.labour_total_cents).toBe(5000);
  });

  it('falls back on the regional tariff grid, then the national one', async () => {
    const [lyon] = await t.database.db
      .insert(cities)
      .values({ inseeCode: '69123', name: 'Lyon', postalCodes: ['69001'], departmentCode: '69', regionCode: '84', latitude: 45.76, longitude: 4.83 })
      .returning();
    const [national, regional] = await t.database.db
      .insert(tariffGrids)
      .values([
        { name: 'Citadines national', vehicleCategory: 'city', hourlyRateCents: 6000 },
        { name: 'Citadines Auvergne-Rhône-Alpes', vehicleCategory: 'city', regionCode: '84', hourlyRateCents: 6600 },
      ])
      .returning();
    const inLyon = await createPrestataire(t, { status: 'validated', profile: { cityId: lyon!.id } });
    const elsewhere = await createPrestataire(t, { status: 'validated' });
    const a = (await estimate(t, inLyon.token, { plate: 'AB-123-CD', task_codes: ['oil_filter_change'] })).json() as { data: Estimate };
    expect(a.data.rate).toEqual({ hourly_rate_cents: 6600, source: 'tariff_grid', tariff_grid_id: regional!.id });
    const b = (await estimate(t, elsewhere.token, { plate: 'AB-123-CD', task_codes: ['oil_filter_change'] })).json() as { data: Estimate };
    expect(b.data.rate).toEqual({ hourly_rate_cents: 6000, source: 'tariff_grid', tariff_grid_id: national!.id });
    // No grid for vans: the prestataire must set a rate.
    const van = await estimate(t, elsewhere.token, { plate: '1234 AB 75', task_codes: ['oil_filter_change'] });
    expect(expectError(van, 422, 'validation_error').errors).toHaveProperty('hourly_rate_cents');
  });

  it('explains the estimate in the prestataire language with the built-in method', async () => {
    const garage = await createPrestataire(t, { status: 'validated', profile: { hourlyRateCents: 6000 } });
    const fr = (await estimate(t, garage.token, { plate: 'AB-123-CD', task_codes: ['oil_filter_change'], explain: true })).json() as { data: Estimate };
    expect(fr.data.explanation).toContain("Main-d'œuvre pour Renault Clio V 1.0 TCe 100");
    expect(fr.data.explanation).toContain('60,00');
    expect(fr.data.ai).toMatchObject({ source: 'builtin', cached: false });
    await t.database.db.update(users).set({ lang: 'en' }).where(eq(users.id, garage.user.id));
    const en = (await estimate(t, garage.token, { plate: 'AB-123-CD', task_codes: ['oil_filter_change'], explain: true })).json() as { data: Estimate };
    expect(en.data.explanation).toContain('Labour for Renault Clio V');
    expect(en.data.explanation).toContain('€30.00');
  });

  it('refuses unknown tasks by position, unknown vehicles, and bad bodies', async () => {
    const garage = await createPrestataire(t, { status: 'validated', profile: { hourlyRateCents: 6000 } });
    // An electric car has no oil to change.
    const ev = expectError(await estimate(t, garage.token, { plate: 'GH-789-JK', task_codes: ['brake_pads_front', 'oil_filter_change'] }), 422, 'validation_error');
    expect(Object.keys(ev.errors!)).toEqual(['task_codes.1']);
    expectError(await estimate(t, garage.token, { repairdata_vehicle_id: 'no-such-car', task_codes: ['oil_filter_change'] }), 404, 'not_found');
    expectError(await estimate(t, garage.token, { plate: 'ZZ-998-ZZ', task_codes: ['oil_filter_change'] }), 404, 'not_found');
    expectError(await estimate(t, garage.token, { task_codes: ['oil_filter_change'] }), 422, 'validation_error');
    expectError(await estimate(t, garage.token, { plate: 'AB-123-CD', vin: 'VF1RJA00XK1234567', task_codes: ['oil_filter_change'] }), 422, 'validation_error');
    expectError(await estimate(t, garage.token, { plate: 'AB-123-CD', task_codes: [] }), 422, 'validation_error');
    expectError(await estimate(t, garage.token, { plate: 'AB-123-CD', task_codes: ['a', 'a'] }), 422, 'validation_error');
    expectError(await estimate(t, garage.token, { plate: 'AB-123-CD', task_codes: ['../etc'] }), 422, 'validation_error');
  });

  it('is for prestataires only', async () => {
    const client = await createClient(t);
    expectError(await estimate(t, client.token, { plate: 'AB-123-CD', task_codes: ['oil_filter_change'] }), 403, 'forbidden');
    expectError(await t.app.inject({ method: 'POST', url: '/api/v1/prestataire/labor/estimate', payload: {} }), 401, 'unauthenticated');
    const suspended = await createPrestataire(t, { status: 'validated', profile: { hourlyRateCents: 6000 } });
    await t.database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, suspended.user.id));
    expectError(await estimate(t, suspended.token, { plate: 'AB-123-CD', task_codes: ['oil_filter_change'] }), 401, 'unauthenticated');
  });
});

describe('estimate explanations from a model', () => {
  let t: TestApp;
  let server: Awaited<ReturnType<typeof startChatServer>>;
  beforeAll(async () => {
    server = await startChatServer((request) =>
      request.messages[1]!.content.includes('"spark_plugs"') ? { status: 500 } : { content: 'Une vidange prend une demi-heure.' },
    );
    t = await buildTestApp({ AI_API_URL: server.url, AI_MODEL: 'mini-model' });
  });
  afterAll(async () => {
    await t.close();
    await server.close();
  });

  it('uses the model, caches by estimate, and falls back when it fails', async () => {
    const garage = await createPrestataire(t, { status: 'validated', profile: { hourlyRateCents: 6000 } });
    const first = (await estimate(t, garage.token, { plate: 'AB-123-CD', task_codes: ['oil_filter_change'], explain: true })).json() as { data: Estimate };
    expect(first.data).toMatchObject({ explanation: 'Une vidange prend une demi-heure.', ai: { source: 'model', cached: false } });
    expect(server.requests[0]!.response_format).toBeUndefined();
    const second = (await estimate(t, garage.token, { plate: 'AB-123-CD', task_codes: ['oil_filter_change'], explain: true })).json() as { data: Estimate };
    expect(second.data.ai).toMatchObject({ source: 'model', cached: true });
    expect(server.requests).toHaveLength(1);
    const failed = (await estimate(t, garage.token, { plate: 'AB-123-CD', task_codes: ['spark_plugs'], explain: true })).json() as { data: Estimate };
    expect(failed.data.ai).toMatchObject({ source: 'builtin', cached: false });
    expect(failed.data.explanation).toContain("Main-d'œuvre");
  });
});
