import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, services } from '../src/db/schema/index.js';
import { lifecycleFixtures, nonAdminTokens } from './admin-lifecycle-fixtures.js';
import {
  bearer,
  buildTestApp,
  createAdmin,
  createClient,
  createPrestataire,
  expectAdminOnly,
  expectError,
  type NonAdminTokens,
  type TestApp,
  type TestUser,
} from './helpers.js';

let t: TestApp;
let admin: TestUser;
let tokens: NonAdminTokens;
let fx: ReturnType<typeof lifecycleFixtures>;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '100000' });
  fx = lifecycleFixtures(t);
  admin = await createAdmin(t);
  tokens = await nonAdminTokens(t);
});
afterAll(() => t.close());

interface AdminService {
  id: number;
  slug: string;
  name: string;
  description: string | null;
  duration_minutes: number;
  price_cents: number | null;
  position: number;
  active: boolean;
  category: { id: number; slug: string; name: string };
}

function call(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown, token = admin.token) {
  return t.app.inject({ method, url: `/api/v1/admin${url}`, headers: bearer(token), payload: payload as object });
}
const dataOf = <T>(res: { json(): unknown }) => (res.json() as { data: T }).data;

async function logOf(subjectId: number | null, action: string) {
  const rows = await t.database.db
    .select()
    .from(activityLog)
    .where(and(eq(activityLog.action, action), subjectId === null ? undefined : eq(activityLog.subjectId, subjectId)));
  return rows;
}

describe('admin services', () => {
  it('creates a service last of its category with a slug made from the name, and logs it', async () => {
    const category = await fx.category();
    await fx.service(category.id, { position: 4 });
    const res = await call('POST', '/services', {
      category_id: category.id,
      name: 'Remplacement des plaquettes — Avant (œuvre)',
      description: 'Les deux côtés',
      duration_minutes: 90,
      price_cents: 8900,
    });
    expect(res.statusCode, res.body).toBe(201);
    const created = dataOf<AdminService>(res);
    expect(created).toMatchObject({
      slug: 'remplacement-des-plaquettes-avant-oeuvre',
      position: 5,
      active: true,
      price_cents: 8900,
      category: { id: category.id },
    });
    const [entry] = await logOf(created.id, 'service.created');
    expect(entry).toMatchObject({ actorId: admin.user.id, subjectType: 'service', after: expect.objectContaining({ name: created.name }) });

    // The same name again makes the same slug: a conflict naming it; an explicit slug goes through.
    const twin = expectError(await call('POST', '/services', { category_id: category.id, name: created.name, duration_minutes: 30 }), 409, 'conflict');
    expect(Object.keys(twin.errors!)).toEqual(['slug']);
    const given = await call('POST', '/services', { category_id: category.id, name: created.name, slug: 'plaquettes-avant-2', duration_minutes: 30, active: false });
    expect(dataOf<AdminService>(given)).toMatchObject({ slug: 'plaquettes-avant-2', active: false, price_cents: null, position: 6 });
  });

  it('refuses bad bodies with every field named', async () => {
    const bad = expectError(
      await call('POST', '/services', { category_id: 0, name: 'x', slug: 'Not A Slug', duration_minutes: 0, price_cents: -1, active: 'yes' }),
      422,
      'validation_error',
    );
    expect(Object.keys(bad.errors!).sort()).toEqual(['active', 'category_id', 'duration_minutes', 'name', 'price_cents', 'slug']);
    const unknownCategory = expectError(await call('POST', '/services', { category_id: 999_999, name: 'Vidange', duration_minutes: 30 }), 422, 'validation_error');
    expect(Object.keys(unknownCategory.errors!)).toEqual(['category_id']);
    const noLetters = expectError(await call('POST', '/services', { category_id: (await fx.category()).id, name: '—— !!', duration_minutes: 30 }), 422, 'validation_error');
    expect(Object.keys(noLetters.errors!)).toEqual(['slug']);
    expectError(await call('GET', '/services/abc'), 422, 'validation_error');
    expectError(await call('GET', '/services?active=maybe'), 422, 'validation_error');
    expectError(await call('GET', '/services?per_page=101'), 422, 'validation_error');
  });

  it('lists every service, inactive ones included, by category then position, with filters', async () => {
    const first = await fx.category({ position: -20 });
    const second = await fx.category({ position: -10 });
    const b2 = await fx.service(second.id, { position: 2, name: 'Géométrie du train avant' });
    const a1 = await fx.service(first.id, { position: 1, active: false, name: 'Équilibrage des roues' });
    const b1 = await fx.service(second.id, { position: 1 });

    const all = await call('GET', '/services?per_page=100');
    const ids = dataOf<AdminService[]>(all).map((s) => s.id);
    expect(ids.slice(0, 3)).toEqual([a1.id, b1.id, b2.id]);

    expect(dataOf<AdminService[]>(await call('GET', `/services?category_id=${second.id}`)).map((s) => s.id)).toEqual([b1.id, b2.id]);
    const inactive = dataOf<AdminService[]>(await call('GET', `/services?category_id=${first.id}&active=false`));
    expect(inactive.map((s) => s.id)).toEqual([a1.id]);
    expect(dataOf<AdminService[]>(await call('GET', `/services?category_id=${first.id}&active=true`))).toEqual([]);
    // Accents and case ignored.
    const found = await call('GET', '/services?q=geometrie');
    expect(dataOf<AdminService[]>(found).map((s) => s.id)).toEqual([b2.id]);
    expect((found.json() as { meta: { total: number } }).meta.total).toBe(1);

    const shown = dataOf<AdminService>(await call('GET', `/services/${a1.id}`));
    expect(shown).toMatchObject({ id: a1.id, active: false, category: { id: first.id } });
    expectError(await call('GET', '/services/999999'), 404, 'not_found');
  });

  it('patches some fields and replaces the whole, logging before and after', async () => {
    const category = await fx.category();
    const other = await fx.category();
    await fx.service(other.id, { position: 7 });
    const s = await fx.service(category.id, { description: 'Ancienne', priceCents: 5000 });

    const patched = await call('PATCH', `/services/${s.id}`, { price_cents: 5500 });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(dataOf<AdminService>(patched)).toMatchObject({ price_cents: 5500, description: 'Ancienne', slug: s.slug });
    const [patchEntry] = await logOf(s.id, 'service.updated');
    expect(patchEntry).toMatchObject({ before: { price_cents: 5000 }, after: { price_cents: 5500 } });

    // PUT: the whole service; left-out optional fields go back to their defaults, the slug stays.
    const replaced = await call('PUT', `/services/${s.id}`, { category_id: other.id, name: 'Contrôle pollution', duration_minutes: 45 });
    expect(dataOf<AdminService>(replaced)).toMatchObject({
      name: 'Contrôle pollution',
      slug: s.slug,
      description: null,
      price_cents: null,
      duration_minutes: 45,
      active: true,
      category: { id: other.id },
      position: 8,
    });
    const incomplete = expectError(await call('PUT', `/services/${s.id}`, { name: 'Sans le reste' }), 422, 'validation_error');
    expect(Object.keys(incomplete.errors!).sort()).toEqual(['category_id', 'duration_minutes']);

    const taken = await fx.service(category.id);
    expectError(await call('PATCH', `/services/${s.id}`, { slug: taken.slug }), 409, 'conflict');
    expectError(await call('PATCH', '/services/999999', { name: 'Personne' }), 404, 'not_found');
    expectError(await call('PATCH', `/services/${s.id}`, { category_id: 999_999 }), 422, 'validation_error');
  });

  it('deletes an unused service, and deactivates one in use instead', async () => {
    const category = await fx.category();
    const unused = await fx.service(category.id);
    const deleted = await call('DELETE', `/services/${unused.id}`);
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json()).toEqual({ data: null, message: 'Service deleted' });
    expectError(await call('GET', `/services/${unused.id}`), 404, 'not_found');
    expect(await logOf(unused.id, 'service.deleted')).toHaveLength(1);

    const prestataire = await createPrestataire(t, { status: 'validated' });
    const offered = await fx.service(category.id);
    await fx.offerService(prestataire.user.id, offered.id);
    const client = await createClient(t);
    const vehicle = await fx.vehicle(client.user.id);
    const requested = await fx.service(category.id);
    await fx.request({ clientId: client.user.id, vehicleId: vehicle.id, serviceId: requested.id });

    for (const s of [offered, requested]) {
      const res = await call('DELETE', `/services/${s.id}`);
      expect(res.statusCode).toBe(200);
      const body = res.json() as { data: AdminService; message: string };
      expect(body.data).toMatchObject({ id: s.id, active: false });
      expect(body.message).toMatch(/deactivated/);
      const [entry] = await logOf(s.id, 'service.deactivated');
      expect(entry).toMatchObject({ before: { active: true }, after: { active: false } });
    }
    const [row] = await t.database.db.select().from(services).where(eq(services.id, requested.id));
    expect(row?.active).toBe(false);
    // Deleting it again changes nothing and logs nothing more.
    expect((await call('DELETE', `/services/${offered.id}`)).statusCode).toBe(200);
    expect(await logOf(offered.id, 'service.deactivated')).toHaveLength(1);
    expectError(await call('DELETE', '/services/999999'), 404, 'not_found');
  });

  it('reorders services in one go, or not at all when an id is unknown', async () => {
    const category = await fx.category();
    const [a, b, c] = [await fx.service(category.id, { position: 0 }), await fx.service(category.id, { position: 1 }), await fx.service(category.id, { position: 2 })];
    const res = await call('PUT', '/services/reorder', { services: [{ id: c.id, position: 0 }, { id: a.id, position: 1 }, { id: b.id, position: 2 }] });
    expect(res.statusCode, res.body).toBe(200);
    expect(dataOf<AdminService[]>(res).map((s) => s.id)).toEqual([c.id, a.id, b.id]);
    const listed = dataOf<AdminService[]>(await call('GET', `/services?category_id=${category.id}`));
    expect(listed.map((s) => [s.id, s.position])).toEqual([[c.id, 0], [a.id, 1], [b.id, 2]]);
    const [entry] = await logOf(null, 'service.reordered');
    expect(entry).toMatchObject({ before: { positions: { [c.id]: 2, [a.id]: 0, [b.id]: 1 } }, after: { positions: { [c.id]: 0, [a.id]: 1, [b.id]: 2 } } });

    const unknown = expectError(await call('PUT', '/services/reorder', { services: [{ id: a.id, position: 9 }, { id: 999_999, position: 0 }] }), 422, 'validation_error');
    expect(Object.keys(unknown.errors!)).toEqual(['services.1.id']);
    const after = dataOf<AdminService>(await call('GET', `/services/${a.id}`));
    expect(after.position).toBe(1);
    const twice = expectError(await call('PUT', '/services/reorder', { services: [{ id: a.id, position: 1 }, { id: a.id, position: 2 }] }), 422, 'validation_error');
    expect(Object.keys(twice.errors!)).toEqual(['services.1.id']);
    expectError(await call('PUT', '/services/reorder', { services: [] }), 422, 'validation_error');
    expectError(await call('PUT', '/services/reorder', { ids: [a.id] }), 422, 'validation_error');
  });

  it('lists every category with its counts of services, all and active', async () => {
    const category = await fx.category({ position: -100 });
    await fx.service(category.id);
    await fx.service(category.id, { active: false });
    const empty = await fx.category({ position: -99 });
    const res = await call('GET', '/service-categories');
    expect(res.statusCode).toBe(200);
    const data = dataOf<{ id: number; position: number; services_count: number; active_services_count: number }[]>(res);
    expect(data.slice(0, 2)).toMatchObject([
      { id: category.id, services_count: 2, active_services_count: 1 },
      { id: empty.id, services_count: 0, active_services_count: 0 },
    ]);
    const positions = data.map((c) => c.position);
    expect(positions).toEqual([...positions].sort((x, y) => x - y));
  });

  it('is for administrators only', async () => {
    const category = await fx.category();
    const s = await fx.service(category.id);
    await expectAdminOnly(t, tokens, 'GET', '/admin/services');
    await expectAdminOnly(t, tokens, 'POST', '/admin/services', { category_id: category.id, name: 'Intrus', duration_minutes: 30 });
    await expectAdminOnly(t, tokens, 'GET', `/admin/services/${s.id}`);
    await expectAdminOnly(t, tokens, 'PUT', `/admin/services/${s.id}`, { category_id: category.id, name: 'Intrus', duration_minutes: 30 });
    await expectAdminOnly(t, tokens, 'PATCH', `/admin/services/${s.id}`, { name: 'Intrus' });
    await expectAdminOnly(t, tokens, 'DELETE', `/admin/services/${s.id}`);
    await expectAdminOnly(t, tokens, 'PUT', '/admin/services/reorder', { services: [{ id: s.id, position: 3 }] });
    await expectAdminOnly(t, tokens, 'GET', '/admin/service-categories');
    const [row] = await t.database.db.select().from(services).where(eq(services.id, s.id));
    expect(row).toMatchObject({ name: s.name, position: s.position, active: true });
  });
});
