import { and, asc, eq, inArray, notInArray } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { prestataireServices, serviceCategories, services } from '../../db/schema/index.js';

/** One service a prestataire offers, with its effective price and duration (its own, else the catalogue's). */
export interface OwnService {
  serviceId: number;
  name: string;
  slug: string;
  category: { id: number; slug: string; name: string };
  ownPriceCents: number | null;
  ownDurationMinutes: number | null;
  cataloguePriceCents: number | null;
  catalogueDurationMinutes: number;
}

/** The prestataire's services still active in the catalogue, in catalogue order. */
export function listOwnServices(db: DbTx, prestataireId: number): Promise<OwnService[]> {
  return db
    .select({
      serviceId: services.id,
      name: services.name,
      slug: services.slug,
      category: { id: serviceCategories.id, slug: serviceCategories.slug, name: serviceCategories.name },
      ownPriceCents: prestataireServices.priceCents,
      ownDurationMinutes: prestataireServices.durationMinutes,
      cataloguePriceCents: services.priceCents,
      catalogueDurationMinutes: services.durationMinutes,
    })
    .from(prestataireServices)
    .innerJoin(services, eq(services.id, prestataireServices.serviceId))
    .innerJoin(serviceCategories, eq(serviceCategories.id, services.categoryId))
    .where(and(eq(prestataireServices.prestataireId, prestataireId), eq(services.active, true)))
    .orderBy(asc(serviceCategories.position), asc(services.position), asc(services.id));
}

/** The catalogue's defaults of those of `ids` that are active. */
export async function findActiveServices(db: DbTx, ids: number[]) {
  if (ids.length === 0) return [];
  return db
    .select({ id: services.id, priceCents: services.priceCents, durationMinutes: services.durationMinutes })
    .from(services)
    .where(and(inArray(services.id, ids), eq(services.active, true)));
}

/** Removes every service of the prestataire not in `keep`. */
export async function removeServicesExcept(db: DbTx, prestataireId: number, keep: number[]) {
  const own = eq(prestataireServices.prestataireId, prestataireId);
  await db.delete(prestataireServices).where(keep.length === 0 ? own : and(own, notInArray(prestataireServices.serviceId, keep)));
}

/** Adds or updates each service; one already offered keeps the date it was first added. */
export async function upsertServices(
  db: DbTx,
  prestataireId: number,
  rows: { serviceId: number; priceCents: number | null; durationMinutes: number }[],
) {
  for (const row of rows) {
    await db
      .insert(prestataireServices)
      .values({ prestataireId, ...row })
      .onConflictDoUpdate({
        target: [prestataireServices.prestataireId, prestataireServices.serviceId],
        set: { priceCents: row.priceCents, durationMinutes: row.durationMinutes },
      });
  }
}

/** Adds one service unless already offered; true when it was added. */
export async function addServiceIfAbsent(
  db: DbTx,
  prestataireId: number,
  row: { serviceId: number; priceCents: number | null; durationMinutes: number },
): Promise<boolean> {
  const inserted = await db
    .insert(prestataireServices)
    .values({ prestataireId, ...row })
    .onConflictDoNothing()
    .returning({ serviceId: prestataireServices.serviceId });
  return inserted.length > 0;
}
