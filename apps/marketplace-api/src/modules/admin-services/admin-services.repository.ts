import { queryRows } from '@repo/db';
import { and, asc, count, eq, inArray, or, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import {
  appointments,
  prestataireServices,
  serviceCategories,
  serviceRequests,
  services,
  type Service,
} from '../../db/schema/index.js';
import { foldedContains, pageOfServices } from '../catalogue/index.js';


const categorySummary = { id: serviceCategories.id, slug: serviceCategories.slug, name: serviceCategories.name };

/** Every service, active or not, by category then position (the catalogue's order). */
export async function listServices(
  db: DbTx,
  filters: { categoryId?: number; active?: boolean; q?: string },
  limit: number,
  offset: number,
) {
  const where = and(
    filters.categoryId === undefined ? undefined : eq(services.categoryId, filters.categoryId),
    filters.active === undefined ? undefined : eq(services.active, filters.active),
    filters.q === undefined
      ? undefined
      : or(
          foldedContains(services.name, filters.q),
          foldedContains(services.slug, filters.q),
          foldedContains(sql`coalesce(${services.description}, '')`, filters.q),
        ),
  );
  return pageOfServices(db, where, limit, offset);
}

/** A service, active or not, with its category. */
export async function findService(db: DbTx, serviceId: number) {
  const [row] = await db
    .select({ service: services, category: categorySummary })
    .from(services)
    .innerJoin(serviceCategories, eq(serviceCategories.id, services.categoryId))
    .where(eq(services.id, serviceId))
    .limit(1);
  return row;
}

/** The service row locked for the rest of the transaction (a concurrent edit or delete waits). */
export async function lockService(db: DbTx, serviceId: number): Promise<Service | undefined> {
  const [row] = await db.select().from(services).where(eq(services.id, serviceId)).for('update').limit(1);
  return row;
}

export async function slugTaken(db: DbTx, slug: string, exceptId?: number): Promise<boolean> {
  const [row] = await db
    .select({ id: services.id })
    .from(services)
    .where(and(eq(services.slug, slug), exceptId === undefined ? undefined : sql`${services.id} <> ${exceptId}`))
    .limit(1);
  return row !== undefined;
}

/** The position after the last service of a category (a new or moved service goes last). */
export async function nextPosition(db: DbTx, categoryId: number): Promise<number> {
  const [row] = await db
    .select({ next: sql<number>`coalesce(max(${services.position}) + 1, 0)::int` })
    .from(services)
    .where(eq(services.categoryId, categoryId));
  return row?.next ?? 0;
}

export async function insertService(db: DbTx, values: typeof services.$inferInsert): Promise<Service> {
  const [row] = await db.insert(services).values(values).returning();
  return row!;
}

export async function updateService(db: DbTx, serviceId: number, values: Partial<typeof services.$inferInsert>) {
  const [row] = await db
    .update(services)
    .set({ ...values, updatedAt: sql`now()` })
    .where(eq(services.id, serviceId))
    .returning();
  return row;
}

export async function deleteService(db: DbTx, serviceId: number) {
  const [row] = await db.delete(services).where(eq(services.id, serviceId)).returning();
  return row;
}

/** Whether anything refers to the service: a prestataire offering it, a request or an appointment for it. */
export async function serviceInUse(db: DbTx, serviceId: number): Promise<boolean> {
  const [row] = await queryRows<{ used: boolean }>(
    db,
    sql`select (
      exists (select 1 from ${prestataireServices} where ${prestataireServices.serviceId} = ${serviceId})
      or exists (select 1 from ${serviceRequests} where ${serviceRequests.serviceId} = ${serviceId})
      or exists (select 1 from ${appointments} where ${appointments.serviceId} = ${serviceId})
    ) as used`,
  );
  return row?.used === true;
}

/** The services among `ids`, locked, so a reorder sees and writes one consistent set. */
export async function lockServices(db: DbTx, ids: number[]): Promise<Service[]> {
  if (ids.length === 0) return [];
  return db.select().from(services).where(inArray(services.id, ids)).orderBy(asc(services.id)).for('update');
}

export async function setPosition(db: DbTx, serviceId: number, position: number) {
  await db
    .update(services)
    .set({ position, updatedAt: sql`now()` })
    .where(eq(services.id, serviceId));
}

export async function findServicesWithCategory(db: DbTx, ids: number[]) {
  if (ids.length === 0) return [];
  return db
    .select({ service: services, category: categorySummary })
    .from(services)
    .innerJoin(serviceCategories, eq(serviceCategories.id, services.categoryId))
    .where(inArray(services.id, ids))
    .orderBy(asc(serviceCategories.position), asc(serviceCategories.id), asc(services.position), asc(services.id));
}

/** Every category in display order, with how many services it holds in all and how many are active. */
export async function listCategoriesWithCounts(db: DbTx) {
  return db
    .select({
      category: serviceCategories,
      servicesCount: count(services.id),
      activeServicesCount: sql<number>`count(${services.id}) filter (where ${services.active})::int`,
    })
    .from(serviceCategories)
    .leftJoin(services, eq(services.categoryId, serviceCategories.id))
    .groupBy(serviceCategories.id)
    .orderBy(asc(serviceCategories.position), asc(serviceCategories.id));
}
