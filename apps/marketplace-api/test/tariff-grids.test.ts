import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog } from '../src/db/schema/index.js';
import { bearer, buildTestApp, createAdmin, createClient, createPrestataire, expectError, type TestApp } from './helpers.js';

let t: TestApp;
let admin: Awaited<ReturnType<typeof createAdmin>>;
beforeAll(async () => {
  t = await buildTestApp();
  admin = await createAdmin(t);
});
afterAll(() => t.close());

interface Grid {
  id: number;
  name: string;
  vehicle_category: string;
  region_code: string | null;
  hourly_rate_cents: number;
  currency: string;
  active: boolean;
}

function call(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown, token = admin.token) {
  return t.app.inject({ method, url: `/api/v1/admin/tariff-grids${url}`, headers: bearer(token), payload: payload as object });
}

describe('tariff grids', () => {
  it('creates, lists with filters, shows, updates and deletes grids, recording each action', async () => {
    const created = await call('POST', '', { name: 'Citadines Île-de-France', vehicle_category: 'city', region_code: '11', hourly_rate_cents: 8900 });
    expect(created.statusCode, created.body).toBe(201);
    const grid = (created.json() as { data: Grid }).data;
    expect(grid).toMatchObject({ vehicle_category: 'city', region_code: '11', hourly_rate_cents: 8900, currency: 'EUR', active: true });
    await call('POST', '', { name: 'Citadines national', vehicle_category: 'city', hourly_rate_cents: 6500 });
    await call('POST', '', { name: 'Premium national', vehicle_category: 'premium', hourly_rate_cents: 12_000 });

    const city = await call('GET', '?vehicle_category=city');
    expect((city.json() as { data: Grid[] }).data.map((g) => g.region_code)).toEqual([null, '11']);
    const inRegion = await call('GET', '?region_code=11');
    expect((inRegion.json() as { data: Grid[]; meta: { total: number } }).meta.total).toBe(1);

    const shown = await call('GET', `/${grid.id}`);
    expect((shown.json() as { data: Grid }).data.name).toBe('Citadines Île-de-France');

    const patched = await call('PATCH', `/${grid.id}`, { hourly_rate_cents: 9200 });
    expect((patched.json() as { data: Grid }).data).toMatchObject({ hourly_rate_cents: 9200, name: 'Citadines Île-de-France' });

    expect((await call('DELETE', `/${grid.id}`)).json()).toEqual({ message: 'Tariff grid deleted' });
    expectError(await call('GET', `/${grid.id}`), 404, 'not_found');

    const log = await t.database.db.select().from(activityLog);
    const mine = log.filter((e) => e.subjectId === grid.id && e.subjectType === 'tariff_grid');
    expect(mine.map((e) => e.action)).toEqual(['tariff_grid.created', 'tariff_grid.updated', 'tariff_grid.deleted']);
    expect(mine[1]).toMatchObject({ actorId: admin.user.id, before: expect.objectContaining({ hourly_rate_cents: 8900 }), after: expect.objectContaining({ hourly_rate_cents: 9200 }) });
  });

  it('allows one active grid per category and region (409), and another once the first is inactive', async () => {
    const first = await call('POST', '', { name: 'SUV Occitanie', vehicle_category: 'suv', region_code: '76', hourly_rate_cents: 7800 });
    expect(first.statusCode).toBe(201);
    expectError(await call('POST', '', { name: 'SUV Occitanie bis', vehicle_category: 'suv', region_code: '76', hourly_rate_cents: 7000 }), 409, 'conflict');
    const id = (first.json() as { data: Grid }).data.id;
    await call('PUT', `/${id}`, { active: false });
    expect((await call('POST', '', { name: 'SUV Occitanie 2027', vehicle_category: 'suv', region_code: '76', hourly_rate_cents: 8100 })).statusCode).toBe(201);
    // Reactivating the old one would make two.
    expectError(await call('PATCH', `/${id}`, { active: true }), 409, 'conflict');
  });

  it('validates bodies and queries', async () => {
    const body = expectError(await call('POST', '', { name: 'x', vehicle_category: 'tank', region_code: '1', hourly_rate_cents: 0 }), 422, 'validation_error');
    expect(Object.keys(body.errors!).sort()).toEqual(['hourly_rate_cents', 'name', 'region_code', 'vehicle_category']);
    expectError(await call('POST', '', { name: 'Float', vehicle_category: 'city', hourly_rate_cents: 65.5 }), 422, 'validation_error');
    expectError(await call('GET', '?per_page=101'), 422, 'validation_error');
    expectError(await call('GET', '/abc'), 422, 'validation_error');
    expectError(await call('PATCH', '/999999', { name: 'Nothing here' }), 404, 'not_found');
  });

  it('is for admins only', async () => {
    const client = await createClient(t);
    const prestataire = await createPrestataire(t);
    expectError(await t.app.inject({ method: 'GET', url: '/api/v1/admin/tariff-grids' }), 401, 'unauthenticated');
    expectError(await call('GET', '', undefined, client.token), 403, 'forbidden');
    expectError(await call('POST', '', { name: 'Sneaky', vehicle_category: 'city', hourly_rate_cents: 1 }, prestataire.token), 403, 'forbidden');
  });
});
