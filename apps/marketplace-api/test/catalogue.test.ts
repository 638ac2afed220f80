import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceCategories, services } from '../src/db/schema/index.js';
import { CATALOGUE } from '../src/db/seed/catalogue.js';
import { bearer, buildTestApp, createClient, expectError, unique, type TestApp } from './helpers.js';

let t: TestApp;

interface Category {
  id: number;
  slug: string;
  name: string;
  position: number;
  services_count: number;
}
interface Service {
  id: number;
  slug: string;
  name: string;
  description: string | null;
  duration_minutes: number;
  price_cents: number | null;
  currency: string;
  category: { id: number; slug: string; name: string };
}
interface City {
  id: number;
  insee_code: string;
  name: string;
  postal_codes: string[];
  department_code: string;
  population: number | null;
  latitude: number;
  longitude: number;
}
interface Meta {
  current_page: number;
  per_page: number;
  total: number;
  last_page: number;
}

const get = (url: string, headers?: Record<string, string>) => t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers });

beforeAll(async () => {
  t = await buildTestApp({ SEED_REFERENCE_DATA: 'true', RATE_LIMIT_PUBLIC: '100000', RATE_LIMIT_AUTHENTICATED: '100000' });
});

afterAll(async () => {
  await t.close();
});

/** A category of its own with one active and one inactive service, for tests that change the catalogue. */
async function ownCategory() {
  const n = unique();
  const [category] = await t.database.db
    .insert(serviceCategories)
    .values({ slug: `atelier-${n}`, name: `Atelier ${n}`, position: 100 + n })
    .returning();
  const [active, inactive] = await t.database.db
    .insert(services)
    .values([
      { categoryId: category!.id, slug: `lavage-${n}`, name: `Lavage intérieur ${n}`, durationMinutes: 40, priceCents: 3000, position: 1 },
      { categoryId: category!.id, slug: `ancien-${n}`, name: `Ancien service ${n}`, durationMinutes: 30, position: 2, active: false },
    ])
    .returning();
  return { category: category!, active: active!, inactive: inactive! };
}

describe('GET /categories', () => {
  it('lists the seeded categories in order with their active services count', async () => {
    const res = await get('/categories');
    expect(res.statusCode).toBe(200);
    const data = res.json().data as Category[];
    const seeded = data.filter((c) => CATALOGUE.some((s) => s.slug === c.slug));
    expect(seeded.map((c) => c.slug)).toEqual(CATALOGUE.map((c) => c.slug));
    const positions = data.map((c) => c.position);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    const freinage = data.find((c) => c.slug === 'freinage');
    expect(freinage).toMatchObject({ name: 'Freinage', services_count: CATALOGUE.find((c) => c.slug === 'freinage')!.services.length });
  });

  it('does not count inactive services', async () => {
    const { category } = await ownCategory();
    const data = (await get('/categories')).json().data as Category[];
    expect(data.find((c) => c.id === category.id)?.services_count).toBe(1);
  });

  it('answers HEAD', async () => {
    const res = await t.app.inject({ method: 'HEAD', url: '/api/v1/categories' });
    expect(res.statusCode).toBe(200);
  });
});

describe('GET /services', () => {
  it('lists active services by category position then position, paginated', async () => {
    const res = await get('/services?per_page=100');
    expect(res.statusCode).toBe(200);
    const body = res.json() as { data: Service[]; meta: Meta };
    const first = CATALOGUE[0]!;
    expect(body.data[0]).toMatchObject({ slug: first.services[0]!.slug, category: { slug: first.slug }, currency: 'EUR' });
    expect(body.data[0]!.duration_minutes).toBeGreaterThan(0);
    const seededCount = CATALOGUE.reduce((n, c) => n + c.services.length, 0);
    expect(body.meta.total).toBeGreaterThanOrEqual(seededCount);
    expect(body.data.some((s) => s.slug.startsWith('ancien-'))).toBe(false);
    const order = body.data.filter((s) => CATALOGUE.some((c) => c.slug === s.category.slug)).map((s) => s.slug);
    expect(order).toEqual(CATALOGUE.flatMap((c) => c.services.map((s) => s.slug)));
  });

  it('paginates with meta', async () => {
    const res = await get('/services?per_page=5&page=2');
    const body = res.json() as { data: Service[]; meta: Meta };
    expect(body.data).toHaveLength(5);
    expect(body.meta).toMatchObject({ current_page: 2, per_page: 5 });
    expect(body.meta.last_page).toBe(Math.ceil(body.meta.total / 5));
  });

  it('filters by category', async () => {
    const categories = (await get('/categories')).json().data as Category[];
    const climatisation = categories.find((c) => c.slug === 'climatisation')!;
    const body = (await get(`/services?category_id=${climatisation.id}`)).json() as { data: Service[]; meta: Meta };
    expect(body.data.length).toBe(climatisation.services_count);
    expect(body.data.every((s) => s.category.id === climatisation.id)).toBe(true);
    expect(body.meta.total).toBe(climatisation.services_count);
  });

  it('searches names and descriptions, ignoring case and accents', async () => {
    const accentless = (await get('/services?q=equilibrage')).json().data as Service[];
    expect(accentless.map((s) => s.slug)).toContain('montage-equilibrage-pneus');
    const upper = (await get(`/services?q=${encodeURIComponent('PARALLÉLISME')}`)).json().data as Service[];
    expect(upper.map((s) => s.slug)).toContain('geometrie-parallelisme');
    const inDescription = (await get('/services?q=valise')).json().data as Service[];
    expect(inDescription.map((s) => s.slug)).toEqual(['diagnostic-electronique']);
    const apostrophe = (await get(`/services?q=${encodeURIComponent('filtre d habitacle')}`)).json().data as Service[];
    expect(apostrophe.map((s) => s.slug)).toContain('filtre-habitacle');
    const none = (await get('/services?q=zzzz-aucun')).json() as { data: Service[]; meta: Meta };
    expect(none.data).toEqual([]);
    expect(none.meta).toMatchObject({ total: 0, last_page: 1 });
  });

  it('treats LIKE wildcards in q literally', async () => {
    const body = (await get(`/services?q=${encodeURIComponent('%')}`)).json() as { data: Service[] };
    expect(body.data).toEqual([]);
  });

  it('answers 422 for bad query values', async () => {
    expect(expectError(await get('/services?per_page=101'), 422, 'validation_error').errors).toHaveProperty('per_page');
    expect(expectError(await get('/services?page=0'), 422, 'validation_error').errors).toHaveProperty('page');
    expect(expectError(await get('/services?category_id=abc'), 422, 'validation_error').errors).toHaveProperty('category_id');
    expectError(await get('/services?q='), 422, 'validation_error');
    expectError(await get(`/services?q=${'a'.repeat(101)}`), 422, 'validation_error');
  });
});

describe('GET /services/{service}', () => {
  it('shows an active service with its category', async () => {
    const { category, active } = await ownCategory();
    const res = await get(`/services/${active.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toEqual({
      id: active.id,
      slug: active.slug,
      name: active.name,
      description: null,
      duration_minutes: 40,
      price_cents: 3000,
      currency: 'EUR',
      position: 1,
      category: { id: category.id, slug: category.slug, name: category.name },
    });
  });

  it('answers 404 for an inactive or unknown service', async () => {
    const { inactive } = await ownCategory();
    expectError(await get(`/services/${inactive.id}`), 404, 'not_found');
    expectError(await get('/services/999999'), 404, 'not_found');
  });

  it('answers 404 once a service is deactivated', async () => {
    const { active } = await ownCategory();
    await t.database.db.update(services).set({ active: false }).where(eq(services.id, active.id));
    expectError(await get(`/services/${active.id}`), 404, 'not_found');
  });

  it('answers 422 for a malformed id', async () => {
    expectError(await get('/services/abc'), 422, 'validation_error');
    expectError(await get('/services/0'), 422, 'validation_error');
    expectError(await get('/services/1e3'), 422, 'validation_error');
  });

  it('is public: a signed-in user sees the same', async () => {
    const client = await createClient(t);
    const res = await get('/services?per_page=1', bearer(client.token));
    expect(res.statusCode).toBe(200);
  });
});

describe('GET /cities', () => {
  it('finds a city by name, prefix matches first, with its postal codes and coordinates', async () => {
    const res = await get('/cities?q=lyon');
    expect(res.statusCode).toBe(200);
    const body = res.json() as { data: City[]; meta: Meta };
    expect(body.data[0]).toMatchObject({ insee_code: '69123', name: 'Lyon', department_code: '69' });
    expect(body.data[0]!.postal_codes).toContain('69003');
    expect(body.data[0]!.latitude).toBeCloseTo(45.75, 1);
    expect(body.data[0]!.longitude).toBeCloseTo(4.85, 1);
    expect(Object.keys(body.data[0]!).sort()).toEqual(
      ['id', 'insee_code', 'name', 'postal_codes', 'department_code', 'region_code', 'population', 'latitude', 'longitude'].sort(),
    );
  });

  it('ignores accents, case, hyphens and apostrophes', async () => {
    const stEtienne = (await get(`/cities?q=${encodeURIComponent('saint etienne')}`)).json().data as City[];
    expect(stEtienne[0]).toMatchObject({ name: 'Saint-Étienne', insee_code: '42218' });
    const accented = (await get(`/cities?q=${encodeURIComponent('ÉVRY')}`)).json().data as City[];
    expect(accented.map((c) => c.name)).toContain('Évry-Courcouronnes');
    const apostrophe = (await get(`/cities?q=${encodeURIComponent("villeneuve d'ascq")}`)).json().data as City[];
    expect(apostrophe[0]?.name).toBe("Villeneuve-d'Ascq");
  });

  it('folds é, è, ç and œ the same way on either side (PostgreSQL unaccent)', async () => {
    const names = async (q: string) => ((await get(`/cities?q=${encodeURIComponent(q)}`)).json().data as City[]).map((c) => c.name);
    // The term without its accents, with them, in capitals, or accented where the name is not.
    for (const q of ['besancon', 'Besançon', 'BESANÇON']) expect(await names(q), q).toContain('Besançon');
    for (const q of ['beziers', 'Béziers', 'bèziers']) expect(await names(q), q).toContain('Béziers');
    for (const q of ['sete', 'Sète', 'SÈTE']) expect(await names(q), q).toContain('Sète');
    for (const q of ['orleans', 'ORLÉANS']) expect(await names(q), q).toContain('Orléans');
    expect(await names('ecouen')).toContain('Écouen');
    // A LIKE wildcard in the term is a character to find, not a pattern.
    expect(await names('s_te')).toEqual([]);
    expect(await names('%')).toEqual([]);
  });

  it('orders by population among equally good matches', async () => {
    const data = (await get('/cities?q=saint&per_page=10')).json().data as City[];
    const populations = data.map((c) => c.population ?? 0);
    expect(populations).toEqual([...populations].sort((a, b) => b - a));
  });

  it('finds cities by full postal code or its leading digits', async () => {
    const exact = (await get('/cities?postal_code=13008')).json().data as City[];
    expect(exact.map((c) => c.name)).toEqual(['Marseille']);
    const paris16 = (await get('/cities?postal_code=75116')).json().data as City[];
    expect(paris16.map((c) => c.insee_code)).toEqual(['75056']);
    const rhone = (await get('/cities?postal_code=69&per_page=3')).json() as { data: City[]; meta: Meta };
    expect(rhone.data.map((c) => c.name)).toEqual(['Lyon', 'Villeurbanne', 'Vénissieux']);
    expect(rhone.meta.total).toBeGreaterThan(50);
    const digitsAsQ = (await get('/cities?q=69100')).json().data as City[];
    expect(digitsAsQ.map((c) => c.name)).toEqual(['Villeurbanne']);
  });

  it('combines name and postal code', async () => {
    const data = (await get('/cities?q=saint&postal_code=42')).json().data as City[];
    expect(data.length).toBeGreaterThan(0);
    expect(data.every((c) => c.postal_codes.some((p) => p.startsWith('42')) && /saint/i.test(c.name))).toBe(true);
    expect(data[0]?.name).toBe('Saint-Étienne');
  });

  it('paginates: 20 by default, at most 100', async () => {
    const body = (await get('/cities')).json() as { data: City[]; meta: Meta };
    expect(body.data).toHaveLength(20);
    expect(body.data[0]?.name).toBe('Paris');
    expect(body.meta).toMatchObject({ current_page: 1, per_page: 20 });
    expect(body.meta.total).toBeGreaterThan(4500);
    expect((await get('/cities?per_page=100')).json().data).toHaveLength(100);
    expect(expectError(await get('/cities?per_page=101'), 422, 'validation_error').errors).toHaveProperty('per_page');
  });

  it('answers 422 for a malformed postal code or an empty q', async () => {
    expect(expectError(await get('/cities?postal_code=abc'), 422, 'validation_error').errors).toHaveProperty('postal_code');
    expectError(await get('/cities?postal_code=690010'), 422, 'validation_error');
    expectError(await get('/cities?q=%20'), 422, 'validation_error');
  });

  it('answers an empty page when nothing matches', async () => {
    const body = (await get('/cities?q=qwxzv')).json() as { data: City[]; meta: Meta };
    expect(body).toMatchObject({ data: [], meta: { total: 0, last_page: 1 } });
  });
});
