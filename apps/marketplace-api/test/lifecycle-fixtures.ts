import type { LightMyRequestResponse } from 'fastify';
import { eq } from 'drizzle-orm';
import { availabilities, prestataireProfiles, prestataireServices, serviceCategories, services, vehicles } from '../src/db/schema/index.js';
import { bearer, createPrestataire, unique, type TestApp, type TestUser } from './helpers.js';

/** Lyon, where the test prestataires are based (helpers.ts), and a point about 20 km and 100 km away. */
export const LYON = { latitude: 45.7578, longitude: 4.832 };
export const VIENNE = { latitude: 45.5255, longitude: 4.8745 }; // ~26 km south
export const GRENOBLE = { latitude: 45.1885, longitude: 5.7245 }; // ~95 km

export function lifecycleFixtures(t: () => TestApp) {
  const db = () => t().database.db;

  async function service(opts: { priceCents?: number | null; durationMinutes?: number; active?: boolean } = {}) {
    const n = unique();
    const [category] = await db().insert(serviceCategories).values({ slug: `cat-${n}`, name: `Catégorie ${n}` }).returning();
    const [row] = await db()
      .insert(services)
      .values({
        categoryId: category!.id,
        slug: `service-${n}`,
        name: `Service ${n}`,
        durationMinutes: opts.durationMinutes ?? 60,
        priceCents: opts.priceCents === undefined ? 8000 : opts.priceCents,
        active: opts.active ?? true,
      })
      .returning();
    return row!;
  }

  async function vehicle(owner: TestUser) {
    const [row] = await db().insert(vehicles).values({ ownerId: owner.user.id, make: 'Renault', model: 'Clio', year: 2019 }).returning();
    return row!;
  }

  /**
   * A validated prestataire in Lyon (radius `radiusKm`, default 30) offering the services, open
   * every day 00:00–24:00 so any time at least an hour ahead is free.
   */
  async function prestataire(serviceIds: number[], opts: { radiusKm?: number; own?: { priceCents?: number; durationMinutes?: number } } = {}) {
    const p = await createPrestataire(t(), { status: 'validated' });
    await db()
      .update(prestataireProfiles)
      .set({ serviceRadiusKm: opts.radiusKm ?? 30 })
      .where(eq(prestataireProfiles.userId, p.user.id));
    for (const serviceId of serviceIds) {
      await db().insert(prestataireServices).values({ prestataireId: p.user.id, serviceId, ...opts.own });
    }
    await db()
      .insert(availabilities)
      .values([1, 2, 3, 4, 5, 6, 7].map((dayOfWeek) => ({ prestataireId: p.user.id, dayOfWeek, startTime: '00:00', endTime: '24:00' })));
    return p;
  }

  type Json = Record<string, unknown> | null | undefined;
  function api(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, token?: string, payload?: Json): Promise<LightMyRequestResponse> {
    return t().app.inject({
      method,
      url: `/api/v1${url}`,
      headers: token ? bearer(token) : {},
      ...(payload === undefined ? {} : { payload: payload ?? undefined }),
    });
  }

  /** An open request of the client for the service at a place (Lyon by default); answers its JSON. */
  async function request(client: TestUser, serviceId: number, opts: { at?: { latitude: number; longitude: number }; prestataireId?: number } = {}) {
    const v = await vehicle(client);
    const res = await api('POST', '/service-requests', client.token, {
      vehicle_id: v.id,
      service_id: serviceId,
      description: 'Les plaquettes avant grincent au freinage',
      ...(opts.at ?? LYON),
      ...(opts.prestataireId ? { prestataire_id: opts.prestataireId } : {}),
    });
    if (res.statusCode !== 201) throw new Error(`request: ${res.statusCode} ${res.body}`);
    return res.json().data as { id: number; status: string; vehicle_id: number };
  }

  /** An instant `days` days from now at a whole hour, in UTC ISO form. */
  function inDays(days: number, hour = 10) {
    const d = new Date(Date.now() + days * 86_400_000);
    d.setUTCHours(hour, 0, 0, 0);
    return d.toISOString();
  }

  async function offer(p: TestUser, requestId: number, body: Record<string, unknown> = {}) {
    return api('POST', `/service-requests/${requestId}/offers`, p.token, {
      amount_cents: 12000,
      proposed_start_at: inDays(3),
      duration_minutes: 60,
      ...body,
    });
  }

  return { service, vehicle, prestataire, api, request, inDays, offer };
}
