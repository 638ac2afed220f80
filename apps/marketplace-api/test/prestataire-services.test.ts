import { and, eq } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, serviceCategories, services } from '../src/db/schema/index.js';
import { bearer, buildTestApp, createAdmin, createClient, createPrestataire, expectError, unique, type TestApp } from './helpers.js';

let t: TestApp;
let category: { id: number; slug: string; name: string };
let brakes: { id: number };
let oil: { id: number };
let retired: { id: number };

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_PUBLIC: '100000', RATE_LIMIT_AUTHENTICATED: '100000' });
  const db = t.database.db;
  const [c] = await db.insert(serviceCategories).values({ slug: 'ws-maintenance', name: 'Maintenance', position: 1 }).returning();
  category = { id: c!.id, slug: c!.slug, name: c!.name };
  const add = async (values: Omit<typeof services.$inferInsert, 'categoryId'>) => {
    const [row] = await db.insert(services).values({ categoryId: c!.id, ...values }).returning();
    return { id: row!.id };
  };
  brakes = await add({ slug: 'ws-brakes', name: 'Brake pads', durationMinutes: 90, priceCents: 12000, position: 2 });
  oil = await add({ slug: 'ws-oil', name: 'Oil change', durationMinutes: 45, priceCents: null, position: 1 });
  retired = await add({ slug: 'ws-retired', name: 'Retired', durationMinutes: 30, active: false });
});
afterAll(() => t.close());

type Json = Record<string, unknown> | undefined;
const api = (method: 'GET' | 'PUT' | 'POST', url: string, token?: string, payload?: Json) =>
  t.app.inject({ method, url: `/api/v1${url}`, headers: token ? bearer(token) : {}, ...(payload === undefined ? {} : { payload }) });
const fieldErrors = (res: LightMyRequestResponse) => expectError(res, 422, 'validation_error').errors ?? {};

describe('GET/PUT /prestataire/services', () => {
  it('starts empty, and PUT sets the whole list with effective prices and durations', async () => {
    const p = await createPrestataire(t); // validation pending: its workspace is still its own to manage
    expect((await api('GET', '/prestataire/services', p.token)).json()).toEqual({ data: [] });

    const put = await api('PUT', '/prestataire/services', p.token, {
      services: [
        { service_id: brakes.id, price_cents: 9900, duration_minutes: 120 },
        { service_id: oil.id }, // the catalogue's defaults
      ],
    });
    expect(put.statusCode).toBe(200);
    const expected = [
      { service_id: oil.id, name: 'Oil change', slug: 'ws-oil', category, price_cents: null, duration_minutes: 45 },
      { service_id: brakes.id, name: 'Brake pads', slug: 'ws-brakes', category, price_cents: 9900, duration_minutes: 120 },
    ];
    expect(put.json().data).toEqual(expected);
    expect((await api('GET', '/prestataire/services', p.token)).json().data).toEqual(expected);

    const [log] = await t.database.db
      .select()
      .from(activityLog)
      .where(and(eq(activityLog.action, 'prestataire.services_updated'), eq(activityLog.subjectId, p.user.id)));
    expect(log).toMatchObject({ actorId: p.user.id, before: { services: [] } });
    expect(log!.after).toEqual({
      services: [
        { service_id: oil.id, price_cents: null, duration_minutes: 45 },
        { service_id: brakes.id, price_cents: 9900, duration_minutes: 120 },
      ],
    });
  });

  it('removes the services left out, and an empty list removes them all', async () => {
    const p = await createPrestataire(t, { status: 'validated' });
    await api('PUT', '/prestataire/services', p.token, { services: [{ service_id: brakes.id }, { service_id: oil.id }] });
    const kept = await api('PUT', '/prestataire/services', p.token, { services: [{ service_id: brakes.id, price_cents: 0 }] });
    expect(kept.json().data.map((s: { service_id: number }) => s.service_id)).toEqual([brakes.id]);
    expect(kept.json().data[0]).toMatchObject({ price_cents: 0, duration_minutes: 90 });
    const publicPage = await api('GET', `/prestataires/${p.user.id}`);
    expect(publicPage.json().data.services).toEqual([expect.objectContaining({ id: brakes.id, price_cents: 0, duration_minutes: 90 })]);

    const emptied = await api('PUT', '/prestataire/services', p.token, { services: [] });
    expect(emptied.json().data).toEqual([]);
    expect((await api('GET', '/prestataire/services', p.token)).json().data).toEqual([]);
  });

  it('refuses unknown, inactive and repeated services and out-of-range values, changing nothing', async () => {
    const p = await createPrestataire(t);
    await api('PUT', '/prestataire/services', p.token, { services: [{ service_id: oil.id }] });
    const unknown = await api('PUT', '/prestataire/services', p.token, {
      services: [{ service_id: brakes.id }, { service_id: 2_000_000_000 }, { service_id: retired.id }],
    });
    expect(fieldErrors(unknown)).toEqual({
      'services.1.service_id': ['No active service has this id'],
      'services.2.service_id': ['No active service has this id'],
    });
    const repeated = fieldErrors(
      await api('PUT', '/prestataire/services', p.token, { services: [{ service_id: brakes.id }, { service_id: brakes.id }] }),
    );
    expect(Object.keys(repeated)).toEqual(['services.1.service_id']);
    const ranges = fieldErrors(
      await api('PUT', '/prestataire/services', p.token, {
        services: [
          { service_id: brakes.id, price_cents: -1, duration_minutes: 14 },
          { service_id: oil.id, duration_minutes: 1441 },
        ],
      }),
    );
    expect(Object.keys(ranges).sort()).toEqual(['services.0.duration_minutes', 'services.0.price_cents', 'services.1.duration_minutes']);
    expect(Object.keys(fieldErrors(await api('PUT', '/prestataire/services', p.token, {})))).toEqual(['services']);
    expect((await api('GET', '/prestataire/services', p.token)).json().data.map((s: { service_id: number }) => s.service_id)).toEqual([oil.id]);
  });
});

describe('POST /prestataire/enable-service/{service}', () => {
  it("adds a service at the catalogue's price (201), and answers 200 with it unchanged the second time", async () => {
    const p = await createPrestataire(t);
    const first = await api('POST', `/prestataire/enable-service/${brakes.id}`, p.token);
    expect(first.statusCode).toBe(201);
    expect(first.json().data).toEqual({ service_id: brakes.id, name: 'Brake pads', slug: 'ws-brakes', category, price_cents: 12000, duration_minutes: 90 });

    await api('PUT', '/prestataire/services', p.token, { services: [{ service_id: brakes.id, price_cents: 5000, duration_minutes: 60 }] });
    const again = await api('POST', `/prestataire/enable-service/${brakes.id}`, p.token);
    expect(again.statusCode).toBe(200);
    expect(again.json().data).toMatchObject({ price_cents: 5000, duration_minutes: 60 });

    const logs = await t.database.db
      .select()
      .from(activityLog)
      .where(and(eq(activityLog.action, 'prestataire.service_enabled'), eq(activityLog.subjectId, p.user.id)));
    expect(logs).toHaveLength(1);
    expect(logs[0]!.after).toEqual({ service_id: brakes.id, price_cents: 12000, duration_minutes: 90 });
  });

  it('answers 404 for an unknown or inactive service and 422 for a malformed id', async () => {
    const p = await createPrestataire(t);
    expectError(await api('POST', `/prestataire/enable-service/${retired.id}`, p.token), 404, 'not_found');
    expectError(await api('POST', '/prestataire/enable-service/2000000000', p.token), 404, 'not_found');
    expectError(await api('POST', '/prestataire/enable-service/abc', p.token), 422, 'validation_error');
    expect((await api('GET', '/prestataire/services', p.token)).json().data).toEqual([]);
  });
});

describe('security', () => {
  it('answers 401 without a token and 403 to a client or an admin', async () => {
    const client = await createClient(t);
    const admin = await createAdmin(t, { email: `ws-admin-${unique()}@example.test` });
    const calls: [method: 'GET' | 'PUT' | 'POST', url: string, body?: Json][] = [
      ['GET', '/prestataire/services'],
      ['PUT', '/prestataire/services', { services: [] }],
      ['POST', `/prestataire/enable-service/${brakes.id}`],
    ];
    for (const [method, url, body] of calls) {
      expectError(await api(method, url, undefined, body), 401, 'unauthenticated');
      expectError(await api(method, url, client.token, body), 403, 'forbidden');
      expectError(await api(method, url, admin.token, body), 403, 'forbidden');
    }
  });

  it("keeps each prestataire's list its own", async () => {
    const [a, b] = [await createPrestataire(t), await createPrestataire(t)];
    await api('PUT', '/prestataire/services', a.token, { services: [{ service_id: brakes.id }] });
    await api('PUT', '/prestataire/services', b.token, { services: [{ service_id: oil.id }] });
    expect((await api('GET', '/prestataire/services', a.token)).json().data.map((s: { service_id: number }) => s.service_id)).toEqual([brakes.id]);
    expect((await api('GET', '/prestataire/services', b.token)).json().data.map((s: { service_id: number }) => s.service_id)).toEqual([oil.id]);
  });
});
