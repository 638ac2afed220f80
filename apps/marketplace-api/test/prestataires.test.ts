import { queryRows } from '@repo/db';
import { eq, inArray, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  availabilities,
  cities,
  favourites,
  galleryPhotos,
  prestataireProfiles,
  prestataireServices,
  serviceCategories,
  services,
  users,
  type ValidationStatus,
} from '../src/db/schema/index.js';
import { systemActor } from '../src/lib/context.js';
import {
  bearer,
  buildTestApp,
  createAdmin,
  createClient,
  createPrestataire,
  expectError,
  tokenFor,
  unique,
  type TestApp,
  type TestUser,
  usersService,
} from './helpers.js';

let t: TestApp;

interface Summary {
  id: number;
  business_name: string;
  description: string | null;
  city: string;
  postal_code: string;
  latitude: number | null;
  longitude: number | null;
  distance_km: number | null;
  rating_average: number | null;
  rating_count: number;
  hourly_rate_cents: number | null;
  price_cents: number | null;
  currency: string;
  photo_url: string | null;
  services: { id: number; slug: string; name: string }[];
}
interface Meta {
  current_page: number;
  per_page: number;
  total: number;
  last_page: number;
}

const PLACES = {
  lyon: { latitude: 45.7578, longitude: 4.832, city: 'Lyon', postalCode: '69002' },
  villeurbanne: { latitude: 45.7667, longitude: 4.8803, city: 'Villeurbanne', postalCode: '69100' },
  marseille: { latitude: 43.2965, longitude: 5.3698, city: 'Marseille', postalCode: '13001' },
  grenoble: { latitude: 45.1885, longitude: 5.7245, city: 'Grenoble', postalCode: '38000' },
};
// The centre of Lyon the searches start from (Hôtel de Ville).
const LYON_CENTRE = { latitude: 45.7676, longitude: 4.8344 };

/** Independent haversine (mean Earth radius) for the expected distances. */
function kmBetween(a: { latitude: number; longitude: number }, b: { latitude: number; longitude: number }) {
  const rad = (d: number) => (d * Math.PI) / 180;
  const h =
    Math.sin(rad(b.latitude - a.latitude) / 2) ** 2 +
    Math.cos(rad(a.latitude)) * Math.cos(rad(b.latitude)) * Math.sin(rad(b.longitude - a.longitude) / 2) ** 2;
  return 2 * 6371 * Math.asin(Math.sqrt(h));
}

const get = (url: string, headers?: Record<string, string>) => t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers });
const search = async (query: Record<string, string | number>) => {
  const params = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]));
  const res = await get(`/prestataires?${params}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { data: Summary[]; meta: Meta };
};
const favourite = (id: number | string, headers?: Record<string, string>) =>
  t.app.inject({ method: 'POST', url: `/api/v1/prestataires/${id}/favourite`, headers });

/** A word no other test's business names contain, to keep each test to its own prestataires. */
const tag = () => `Zq${unique()}x${Math.random().toString(36).slice(2, 6)}`;

async function provider(
  name: string,
  place: keyof typeof PLACES,
  opts: {
    status?: ValidationStatus;
    rating?: number | null;
    ratingCount?: number;
    hourlyRateCents?: number | null;
    description?: string | null;
  } = {},
): Promise<TestUser> {
  const { latitude, longitude, city, postalCode } = PLACES[place];
  const created = await createPrestataire(t, {
    status: opts.status ?? 'validated',
    profile: {
      businessName: name,
      latitude,
      longitude,
      city,
      postalCode,
      description: opts.description ?? null,
      hourlyRateCents: opts.hourlyRateCents ?? null,
    },
  });
  if (opts.rating !== undefined || opts.ratingCount !== undefined) {
    await t.database.db
      .update(prestataireProfiles)
      .set({ ratingAverage: opts.rating ?? null, ratingCount: opts.ratingCount ?? 0 })
      .where(eq(prestataireProfiles.userId, created.user.id));
  }
  return created;
}

async function serviceBySlug(slug: string) {
  const [row] = await t.database.db.select().from(services).where(eq(services.slug, slug));
  return row!;
}

async function offer(prestataireId: number, slug: string, own: { priceCents?: number; durationMinutes?: number } = {}) {
  const service = await serviceBySlug(slug);
  await t.database.db.insert(prestataireServices).values({ prestataireId, serviceId: service.id, ...own });
  return service;
}

async function cityId(insee: string) {
  const [row] = await t.database.db.select({ id: cities.id }).from(cities).where(eq(cities.inseeCode, insee));
  return row!.id;
}

beforeAll(async () => {
  t = await buildTestApp({ SEED_REFERENCE_DATA: 'true', RATE_LIMIT_PUBLIC: '100000', RATE_LIMIT_AUTHENTICATED: '100000' });
});

afterAll(async () => {
  await t.close();
});

describe('GET /prestataires: search by place', () => {
  it('finds prestataires within the radius, nearest first, with distances in km', async () => {
    const word = tag();
    const lyon = await provider(`Garage ${word} Bellecour`, 'lyon');
    const villeurbanne = await provider(`Garage ${word} Gratte-Ciel`, 'villeurbanne');
    await provider(`Garage ${word} Vieux-Port`, 'marseille');

    const body = await search({ ...LYON_CENTRE, radius_km: 20, q: word });
    expect(body.data.map((p) => p.id)).toEqual([lyon.user.id, villeurbanne.user.id]);
    expect(body.meta.total).toBe(2);
    const [first, second] = body.data;
    expect(Math.abs(first!.distance_km! - kmBetween(LYON_CENTRE, PLACES.lyon))).toBeLessThanOrEqual(0.5);
    expect(Math.abs(second!.distance_km! - kmBetween(LYON_CENTRE, PLACES.villeurbanne))).toBeLessThanOrEqual(0.5);
    // Hôtel de Ville → Gratte-Ciel is about 3.6 km as the crow flies.
    expect(second!.distance_km).toBeGreaterThan(3);
    expect(second!.distance_km).toBeLessThan(4.2);
    // One decimal.
    expect(Number.isInteger(second!.distance_km! * 10)).toBe(true);

    const wide = await search({ ...LYON_CENTRE, radius_km: 200, q: word });
    expect(wide.meta.total).toBe(2);
    const widest = await search({ ...LYON_CENTRE, radius_km: 200, q: word, sort: 'rating' });
    expect(widest.data.every((p) => p.distance_km !== null && p.distance_km <= 200)).toBe(true);
  });

  it('measures Lyon → Grenoble as the crow flies (about 94 km) and draws the radius at that distance', async () => {
    const word = tag();
    const grenoble = await provider(`Garage ${word} Grenette`, 'grenoble');
    const from = { latitude: PLACES.lyon.latitude, longitude: PLACES.lyon.longitude };

    const body = await search({ ...from, radius_km: 100, q: word });
    expect(body.data.map((p) => p.id)).toEqual([grenoble.user.id]);
    const km = body.data[0]!.distance_km!;
    // Place Bellecour to Place Grenette: 94.1 km on the mean-radius sphere; earthdistance's sphere
    // (radius 6378.168 km) says 0.11 % more. Either way within 0.3 km, to one decimal.
    expect(km).toBeGreaterThan(93.8);
    expect(km).toBeLessThan(94.5);
    expect(Math.abs(km - kmBetween(from, PLACES.grenoble))).toBeLessThanOrEqual(0.3);

    // The radius filter agrees with the distance it reports: just short of it excludes, just past it includes.
    expect((await search({ ...from, radius_km: Math.floor(km), q: word })).meta.total).toBe(0);
    expect((await search({ ...from, radius_km: Math.ceil(km), q: word })).meta.total).toBe(1);
    expect((await search({ ...from, radius_km: 90, q: word })).meta.total).toBe(0);
  });

  it('can answer the radius filter from the location index', async () => {
    const plan = await t.database.db.transaction(async (tx) => {
      // A test table is too small for the planner to prefer an index on its own.
      await tx.execute(sql`set local enable_seqscan = off`);
      return queryRows<{ 'QUERY PLAN': string }>(
        tx,
        sql`explain select user_id from prestataire_profiles
            where earth_box(ll_to_earth(45.7578, 4.832), 30000) @> location`,
      );
    });
    expect(plan.map((r) => r['QUERY PLAN']).join('\n')).toContain('prestataire_profiles_location_idx');
  });

  it('searches around a city given by id', async () => {
    const word = tag();
    const lyon = await provider(`Atelier ${word} Presqu'île`, 'lyon');
    const villeurbanne = await provider(`Atelier ${word} Charpennes`, 'villeurbanne');
    const marseille = await provider(`Atelier ${word} Canebière`, 'marseille');

    const aroundLyon = await search({ city_id: await cityId('69123'), radius_km: 20, q: word });
    expect(aroundLyon.data.map((p) => p.id).sort()).toEqual([lyon.user.id, villeurbanne.user.id].sort());
    expect(aroundLyon.data.every((p) => p.distance_km !== null && p.distance_km < 20)).toBe(true);

    const aroundMarseille = await search({ city_id: await cityId('13055'), q: word });
    expect(aroundMarseille.data.map((p) => p.id)).toEqual([marseille.user.id]);
    expect(aroundMarseille.data[0]!.distance_km).toBeLessThan(2);
  });

  it('without a point, distance is null and prestataires without coordinates are found', async () => {
    const word = tag();
    const placed = await provider(`Carrosserie ${word}`, 'lyon');
    const unplaced = await provider(`Carrosserie ${word} mobile`, 'lyon');
    await t.database.db
      .update(prestataireProfiles)
      .set({ latitude: null, longitude: null })
      .where(eq(prestataireProfiles.userId, unplaced.user.id));
    const body = await search({ q: word });
    expect(body.data.map((p) => p.id).sort()).toEqual([placed.user.id, unplaced.user.id].sort());
    expect(body.data.every((p) => p.distance_km === null)).toBe(true);
    // A point excludes the one that has none.
    const near = await search({ ...LYON_CENTRE, q: word });
    expect(near.data.map((p) => p.id)).toEqual([placed.user.id]);
  });

  it('answers 422 for half a point, a point and a city, a bad radius, or a distance sort without a point', async () => {
    expect(expectError(await get('/prestataires?latitude=45.7'), 422, 'validation_error').errors).toHaveProperty('longitude');
    expect(expectError(await get('/prestataires?longitude=4.8'), 422, 'validation_error').errors).toHaveProperty('latitude');
    expectError(await get('/prestataires?latitude=91&longitude=4.8'), 422, 'validation_error');
    expectError(await get('/prestataires?latitude=45&longitude=181'), 422, 'validation_error');
    expectError(await get('/prestataires?latitude=abc&longitude=4.8'), 422, 'validation_error');
    const cid = await cityId('69123');
    expect(expectError(await get(`/prestataires?latitude=45.7&longitude=4.8&city_id=${cid}`), 422, 'validation_error').errors).toHaveProperty(
      'city_id',
    );
    expect(expectError(await get('/prestataires?latitude=45.7&longitude=4.8&radius_km=201'), 422, 'validation_error').errors).toHaveProperty(
      'radius_km',
    );
    expectError(await get('/prestataires?latitude=45.7&longitude=4.8&radius_km=0'), 422, 'validation_error');
    expect(expectError(await get('/prestataires?sort=distance'), 422, 'validation_error').errors).toHaveProperty('sort');
    expectError(await get('/prestataires?sort=cheapest'), 422, 'validation_error');
  });

  it('answers 422 for an unknown city, service or category', async () => {
    expect(expectError(await get('/prestataires?city_id=999999'), 422, 'validation_error').errors).toHaveProperty('city_id');
    expect(expectError(await get('/prestataires?service_id=999999'), 422, 'validation_error').errors).toHaveProperty('service_id');
    expect(expectError(await get('/prestataires?category_id=999999'), 422, 'validation_error').errors).toHaveProperty(
      'category_id',
    );
    expectError(await get('/prestataires?city_id=abc'), 422, 'validation_error');
  });
});

describe('GET /prestataires: filters', () => {
  it('filters by service, and answers the prestataire’s own price for it', async () => {
    const word = tag();
    const a = await provider(`Freins ${word} A`, 'lyon');
    const b = await provider(`Freins ${word} B`, 'lyon');
    const c = await provider(`Freins ${word} C`, 'lyon');
    const plaquettes = await offer(a.user.id, 'plaquettes-avant', { priceCents: 9900 });
    await offer(b.user.id, 'plaquettes-avant');
    await offer(c.user.id, 'vidange-filtre-huile', { priceCents: 6900 });

    const body = await search({ service_id: plaquettes.id, q: word });
    expect(body.data.map((p) => p.id).sort()).toEqual([a.user.id, b.user.id].sort());
    const byId = new Map(body.data.map((p) => [p.id, p]));
    expect(byId.get(a.user.id)?.price_cents).toBe(9900);
    expect(byId.get(b.user.id)?.price_cents).toBeNull();
    expect(byId.get(a.user.id)?.services).toEqual([{ id: plaquettes.id, slug: 'plaquettes-avant', name: plaquettes.name }]);

    const withoutService = await search({ q: word });
    expect(withoutService.data.every((p) => p.price_cents === null)).toBe(true);
  });

  it('filters by category through the services offered', async () => {
    const word = tag();
    const clim = await provider(`Froid ${word} 1`, 'lyon');
    const pneus = await provider(`Froid ${word} 2`, 'lyon');
    await offer(clim.user.id, 'recharge-climatisation');
    await offer(pneus.user.id, 'reparation-crevaison');
    const [category] = await t.database.db.select().from(serviceCategories).where(eq(serviceCategories.slug, 'climatisation'));
    const body = await search({ category_id: category!.id, q: word });
    expect(body.data.map((p) => p.id)).toEqual([clim.user.id]);
  });

  it('searches business names and descriptions, ignoring case and accents', async () => {
    const word = tag();
    const byName = await provider(`Électro Dépannage ${word}`, 'lyon');
    const byDescription = await provider(`Garage ${word}`, 'lyon', { description: 'Spécialiste de la boîte de vitesses automatique' });
    const names = await search({ q: `electro depannage ${word}` });
    expect(names.data.map((p) => p.id)).toEqual([byName.user.id]);
    const descriptions = await search({ q: 'BOITE DE VITESSES', sort: 'rating', per_page: 100 });
    expect(descriptions.data.map((p) => p.id)).toContain(byDescription.user.id);
    expect(descriptions.data.map((p) => p.id)).not.toContain(byName.user.id);
    expectError(await get('/prestataires?q='), 422, 'validation_error');
  });

  it('filters by minimum rating', async () => {
    const word = tag();
    const good = await provider(`Note ${word} 1`, 'lyon', { rating: 4.6, ratingCount: 12 });
    const exact = await provider(`Note ${word} 2`, 'lyon', { rating: 4, ratingCount: 3 });
    await provider(`Note ${word} 3`, 'lyon', { rating: 3.2, ratingCount: 8 });
    await provider(`Note ${word} 4`, 'lyon');
    const body = await search({ min_rating: 4, q: word });
    expect(body.data.map((p) => p.id)).toEqual([good.user.id, exact.user.id]);
    expect(body.data[0]).toMatchObject({ rating_average: 4.6, rating_count: 12 });
    expect((await search({ min_rating: 0, q: word })).meta.total).toBe(4);
    expectError(await get('/prestataires?min_rating=5.5'), 422, 'validation_error');
    expectError(await get('/prestataires?min_rating=-1'), 422, 'validation_error');
  });
});

describe('GET /prestataires: sorting and pagination', () => {
  it('sorts by rating, unrated last', async () => {
    const word = tag();
    const unrated = await provider(`Tri ${word} A`, 'lyon');
    const mid = await provider(`Tri ${word} B`, 'lyon', { rating: 4.2, ratingCount: 5 });
    const top = await provider(`Tri ${word} C`, 'lyon', { rating: 4.9, ratingCount: 40 });
    const body = await search({ sort: 'rating', q: word });
    expect(body.data.map((p) => p.id)).toEqual([top.user.id, mid.user.id, unrated.user.id]);
    // Rating is also the default without a point.
    expect((await search({ q: word })).data.map((p) => p.id)).toEqual([top.user.id, mid.user.id, unrated.user.id]);
  });

  it('sorts by distance when asked, and by default with a point', async () => {
    const word = tag();
    const far = await provider(`Loin ${word}`, 'villeurbanne', { rating: 5, ratingCount: 10 });
    const near = await provider(`Près ${word}`, 'lyon', { rating: 3, ratingCount: 10 });
    const explicit = await search({ ...LYON_CENTRE, sort: 'distance', q: word });
    expect(explicit.data.map((p) => p.id)).toEqual([near.user.id, far.user.id]);
    const byDefault = await search({ ...LYON_CENTRE, q: word });
    expect(byDefault.data.map((p) => p.id)).toEqual([near.user.id, far.user.id]);
    const byRating = await search({ ...LYON_CENTRE, sort: 'rating', q: word });
    expect(byRating.data.map((p) => p.id)).toEqual([far.user.id, near.user.id]);
  });

  it('sorts by price: the price for the searched service, else the hourly rate; unknown prices last', async () => {
    const word = tag();
    const cheap = await provider(`Prix ${word} A`, 'lyon', { hourlyRateCents: 9000 });
    const dear = await provider(`Prix ${word} B`, 'lyon', { hourlyRateCents: 5000 });
    const unpriced = await provider(`Prix ${word} C`, 'lyon');
    const vidange = await offer(cheap.user.id, 'vidange-filtre-huile', { priceCents: 5900 });
    await offer(dear.user.id, 'vidange-filtre-huile', { priceCents: 9900 });
    await offer(unpriced.user.id, 'vidange-filtre-huile');

    const forService = await search({ sort: 'price', service_id: vidange.id, q: word });
    expect(forService.data.map((p) => [p.id, p.price_cents])).toEqual([
      [cheap.user.id, 5900],
      [dear.user.id, 9900],
      [unpriced.user.id, null],
    ]);
    const hourly = await search({ sort: 'price', q: word });
    expect(hourly.data.map((p) => [p.id, p.hourly_rate_cents])).toEqual([
      [dear.user.id, 5000],
      [cheap.user.id, 9000],
      [unpriced.user.id, null],
    ]);
  });

  it('paginates with meta', async () => {
    const word = tag();
    const created = [];
    for (let i = 0; i < 5; i++) created.push(await provider(`Page ${word} ${i}`, 'lyon', { rating: 4.9 - i / 10, ratingCount: 1 }));
    const page2 = await search({ q: word, per_page: 2, page: 2 });
    expect(page2.meta).toEqual({ current_page: 2, per_page: 2, total: 5, last_page: 3 });
    expect(page2.data.map((p) => p.id)).toEqual([created[2]!.user.id, created[3]!.user.id]);
    const beyond = await search({ q: word, per_page: 2, page: 4 });
    expect(beyond.data).toEqual([]);
    expect(beyond.meta.total).toBe(5);
    const defaults = await search({ q: word });
    expect(defaults.meta.per_page).toBe(20);
    expect(expectError(await get('/prestataires?per_page=101'), 422, 'validation_error').errors).toHaveProperty('per_page');
    expectError(await get('/prestataires?page=0'), 422, 'validation_error');
  });
});

describe('GET /prestataires: who is listed', () => {
  it('lists only validated prestataires of active, undeleted accounts', async () => {
    const word = tag();
    const shown = await provider(`Visible ${word}`, 'lyon');
    const hidden: number[] = [];
    for (const status of ['pending', 'rejected', 'documents_requested', 'suspended'] as const) {
      hidden.push((await provider(`Hidden ${word} ${status}`, 'lyon', { status })).user.id);
    }
    const banned = await provider(`Hidden ${word} banned`, 'lyon');
    const suspendedUser = await provider(`Hidden ${word} suspended user`, 'lyon');
    await t.database.db.update(users).set({ status: 'banned' }).where(eq(users.id, banned.user.id));
    await t.database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, suspendedUser.user.id));
    const deleted = await provider(`Hidden ${word} deleted`, 'lyon');
    await usersService(t).anonymise(systemActor, deleted.user.id);
    hidden.push(banned.user.id, suspendedUser.user.id, deleted.user.id);

    const body = await search({ q: word });
    expect(body.data.map((p) => p.id)).toEqual([shown.user.id]);
    const near = await search({ ...LYON_CENTRE, q: word });
    expect(near.data.map((p) => p.id)).toEqual([shown.user.id]);
    for (const id of hidden) expectError(await get(`/prestataires/${id}`), 404, 'not_found');
  });

  it('shows nothing private', async () => {
    const word = tag();
    const p = await provider(`Privé ${word}`, 'lyon', { hourlyRateCents: 6500 });
    await t.database.db.update(users).set({ phone: '+33611223344', photoKey: 'public/photos/abc.jpg' }).where(eq(users.id, p.user.id));
    const body = await search({ q: word });
    const item = body.data[0]!;
    expect(item).toMatchObject({
      id: p.user.id,
      business_name: `Privé ${word}`,
      city: 'Lyon',
      postal_code: '69002',
      hourly_rate_cents: 6500,
      currency: 'EUR',
      photo_url: '/api/v1/media/public/photos/abc.jpg',
    });
    const forbidden = ['email', 'siret', 'phone', 'first_name', 'last_name', 'documents', 'validation_status', 'validation_note', 'address'];
    for (const key of forbidden) expect(item).not.toHaveProperty(key);
    expect(JSON.stringify(body)).not.toContain(p.email);
    expect(JSON.stringify(body)).not.toContain(p.profile!.siret);
    expect(JSON.stringify(body)).not.toContain('+33611223344');

    const page = (await get(`/prestataires/${p.user.id}`)).json().data as Record<string, unknown>;
    for (const key of forbidden.filter((k) => k !== 'address')) expect(page).not.toHaveProperty(key);
    const raw = JSON.stringify(page);
    expect(raw).not.toContain(p.email);
    expect(raw).not.toContain(p.profile!.siret);
    expect(raw).not.toContain('+33611223344');
  });
});

describe('GET /prestataires/{prestataire}', () => {
  it('shows the public page: services with prices, gallery, opening hours', async () => {
    const word = tag();
    const p = await provider(`Page ${word}`, 'lyon', { rating: 4.567, ratingCount: 9, hourlyRateCents: 7000, description: 'Mécanique générale' });
    await t.database.db
      .update(prestataireProfiles)
      .set({ publicPhone: '04 78 00 00 00', website: 'https://garage.example', serviceRadiusKm: 25 })
      .where(eq(prestataireProfiles.userId, p.user.id));
    const vidange = await offer(p.user.id, 'vidange-filtre-huile', { priceCents: 7500, durationMinutes: 40 });
    const plaquettes = await offer(p.user.id, 'plaquettes-avant');
    const [photo] = await t.database.db
      .insert(galleryPhotos)
      .values([
        { prestataireId: p.user.id, storageKey: 'public/gallery/b.jpg', caption: 'Atelier', position: 2 },
        { prestataireId: p.user.id, storageKey: 'public/gallery/a.jpg', caption: null, position: 1 },
      ])
      .returning();
    await t.database.db.insert(availabilities).values([
      { prestataireId: p.user.id, dayOfWeek: 2, startTime: '14:00', endTime: '18:00' },
      { prestataireId: p.user.id, dayOfWeek: 1, startTime: '08:00', endTime: '12:00' },
      { prestataireId: p.user.id, dayOfWeek: 2, startTime: '08:30', endTime: '12:00' },
    ]);

    const res = await get(`/prestataires/${p.user.id}`);
    expect(res.statusCode, res.body).toBe(200);
    const data = res.json().data;
    expect(data).toMatchObject({
      id: p.user.id,
      business_name: `Page ${word}`,
      description: 'Mécanique générale',
      address: '12 rue de la République',
      city: 'Lyon',
      postal_code: '69002',
      latitude: PLACES.lyon.latitude,
      longitude: PLACES.lyon.longitude,
      rating_average: 4.57,
      rating_count: 9,
      hourly_rate_cents: 7000,
      currency: 'EUR',
      public_phone: '04 78 00 00 00',
      website: 'https://garage.example',
      service_radius_km: 25,
      timezone: 'Europe/Paris',
      photo_url: null,
    });
    expect(data.member_since).toBe(p.user.createdAt.toISOString());
    expect(data).not.toHaveProperty('is_favourite');
    expect(data.services).toEqual([
      {
        id: vidange.id,
        slug: 'vidange-filtre-huile',
        name: vidange.name,
        description: vidange.description,
        category: { id: vidange.categoryId, slug: 'entretien', name: 'Entretien et révision' },
        price_cents: 7500,
        duration_minutes: 40,
        currency: 'EUR',
        custom_price: true,
      },
      expect.objectContaining({
        id: plaquettes.id,
        category: expect.objectContaining({ slug: 'freinage' }),
        price_cents: plaquettes.priceCents,
        duration_minutes: plaquettes.durationMinutes,
        custom_price: false,
      }),
    ]);
    expect(data.gallery).toEqual([
      { id: expect.any(Number), url: '/api/v1/media/public/gallery/a.jpg', caption: null },
      { id: photo!.id, url: '/api/v1/media/public/gallery/b.jpg', caption: 'Atelier' },
    ]);
    expect(data.opening_hours).toEqual([
      { day_of_week: 1, start_time: '08:00', end_time: '12:00' },
      { day_of_week: 2, start_time: '08:30', end_time: '12:00' },
      { day_of_week: 2, start_time: '14:00', end_time: '18:00' },
    ]);
  });

  it('hides an inactive service from the page and from search results', async () => {
    const word = tag();
    const p = await provider(`Inactif ${word}`, 'lyon');
    const n = unique();
    const [category] = await t.database.db.insert(serviceCategories).values({ slug: `cat-${n}`, name: `Cat ${n}` }).returning();
    const [retired] = await t.database.db
      .insert(services)
      .values({ categoryId: category!.id, slug: `retired-${n}`, name: `Retired ${n}`, durationMinutes: 30, active: false })
      .returning();
    await t.database.db.insert(prestataireServices).values({ prestataireId: p.user.id, serviceId: retired!.id });
    expect((await get(`/prestataires/${p.user.id}`)).json().data.services).toEqual([]);
    expect((await search({ q: word })).data[0]!.services).toEqual([]);
    expectError(await get(`/prestataires?service_id=${retired!.id}`), 422, 'validation_error');
  });

  it('answers 404 for an unknown id or a user who is not a prestataire', async () => {
    const client = await createClient(t);
    expectError(await get(`/prestataires/${client.user.id}`), 404, 'not_found');
    expectError(await get('/prestataires/999999'), 404, 'not_found');
    expectError(await get('/prestataires/abc'), 422, 'validation_error');
  });

  it('tells a signed-in client whether it is a favourite; others see no such field', async () => {
    const p = await provider(`Fav ${tag()}`, 'lyon');
    const client = await createClient(t);
    const before = (await get(`/prestataires/${p.user.id}`, bearer(client.token))).json().data;
    expect(before.is_favourite).toBe(false);
    await t.database.db.insert(favourites).values({ clientId: client.user.id, prestataireId: p.user.id });
    expect((await get(`/prestataires/${p.user.id}`, bearer(client.token))).json().data.is_favourite).toBe(true);

    const admin = await createAdmin(t);
    const asAdmin = await get(`/prestataires/${p.user.id}`, bearer(admin.token));
    expect(asAdmin.statusCode).toBe(200);
    expect(asAdmin.json().data).not.toHaveProperty('is_favourite');
  });

  it('answers 401 for a bad or revoked token rather than ignoring it', async () => {
    const p = await provider(`Jeton ${tag()}`, 'lyon');
    expectError(await get(`/prestataires/${p.user.id}`, bearer('not-a-token')), 401, 'unauthenticated');
    const client = await createClient(t);
    await t.database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, client.user.id));
    expectError(await get(`/prestataires/${p.user.id}`, bearer(client.token)), 401, 'unauthenticated');
  });
});

describe('POST /prestataires/{prestataire}/favourite', () => {
  it('toggles a client’s favourite', async () => {
    const p = await provider(`Coeur ${tag()}`, 'lyon');
    const client = await createClient(t);
    const on = await favourite(p.user.id, bearer(client.token));
    expect(on.statusCode, on.body).toBe(200);
    expect(on.json()).toEqual({ data: { prestataire_id: p.user.id, favourite: true }, message: 'Added to favourites' });
    const rows = await t.database.db.select().from(favourites).where(eq(favourites.clientId, client.user.id));
    expect(rows.map((r) => r.prestataireId)).toEqual([p.user.id]);

    const off = await favourite(p.user.id, bearer(client.token));
    expect(off.json()).toEqual({ data: { prestataire_id: p.user.id, favourite: false }, message: 'Removed from favourites' });
    expect(await t.database.db.select().from(favourites).where(eq(favourites.clientId, client.user.id))).toEqual([]);
  });

  it('keeps one row when two toggles race', async () => {
    const p = await provider(`Course ${tag()}`, 'lyon');
    const client = await createClient(t);
    const results = await Promise.all([favourite(p.user.id, bearer(client.token)), favourite(p.user.id, bearer(client.token))]);
    expect(results.every((r) => r.statusCode === 200)).toBe(true);
    const rows = await t.database.db
      .select()
      .from(favourites)
      .where(inArray(favourites.clientId, [client.user.id]));
    expect(rows.length).toBeLessThanOrEqual(1);
  });

  it('lets a client remove a prestataire that is no longer listed, but not add one', async () => {
    const p = await provider(`Retiré ${tag()}`, 'lyon');
    const client = await createClient(t);
    expect((await favourite(p.user.id, bearer(client.token))).json().data.favourite).toBe(true);
    await t.database.db.update(prestataireProfiles).set({ validationStatus: 'suspended' }).where(eq(prestataireProfiles.userId, p.user.id));
    expect((await favourite(p.user.id, bearer(client.token))).json().data.favourite).toBe(false);
    expectError(await favourite(p.user.id, bearer(client.token)), 404, 'not_found');
  });

  it('answers 404 for an unknown, pending or non-prestataire id', async () => {
    const client = await createClient(t);
    const pending = await provider(`Attente ${tag()}`, 'lyon', { status: 'pending' });
    const other = await createClient(t);
    expectError(await favourite(999999, bearer(client.token)), 404, 'not_found');
    expectError(await favourite(pending.user.id, bearer(client.token)), 404, 'not_found');
    expectError(await favourite(other.user.id, bearer(client.token)), 404, 'not_found');
    expectError(await favourite('abc', bearer(client.token)), 422, 'validation_error');
  });

  it('is for clients only: 401 without a token, 403 for prestataires and admins', async () => {
    const p = await provider(`Rôle ${tag()}`, 'lyon');
    expectError(await favourite(p.user.id), 401, 'unauthenticated');
    const otherPrestataire = await provider(`Rôle ${tag()}`, 'lyon');
    expectError(await favourite(p.user.id, bearer(otherPrestataire.token)), 403, 'forbidden');
    const admin = await createAdmin(t);
    expectError(await favourite(p.user.id, bearer(admin.token)), 403, 'forbidden');
  });

  it('refuses a suspended client’s token', async () => {
    const p = await provider(`Suspendu ${tag()}`, 'lyon');
    const client = await createClient(t);
    const token = await tokenFor(t, client.user.id);
    await t.database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, client.user.id));
    expectError(await favourite(p.user.id, bearer(token)), 401, 'unauthenticated');
  });
});

describe('coordinates at the edge of floating point', () => {
  it('rounds tiny coordinates instead of failing the distance arithmetic', async () => {
    await createPrestataire(t, { status: 'validated', profile: { latitude: 0.0000001, longitude: 0.0000001 } });
    for (const value of ['4.4e-181', '-5e-324', '1e-7']) {
      const res = await t.app.inject({ method: 'GET', url: `/api/v1/prestataires?latitude=${value}&longitude=${value}&sort=distance` });
      expect(res.statusCode, `${value}: ${res.body}`).toBe(200);
    }
  });
});
