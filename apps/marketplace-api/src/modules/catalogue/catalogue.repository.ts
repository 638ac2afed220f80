import { and, asc, count, eq, or, sql, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { cities, serviceCategories, services } from '../../db/schema/index.js';
import { foldedContains, foldedStartsWith } from './text-search.js';

/** Categories in display order with the number of their active services. */
export async function listCategories(db: DbTx) {
  return db
    .select({ category: serviceCategories, servicesCount: count(services.id) })
    .from(serviceCategories)
    .leftJoin(services, and(eq(services.categoryId, serviceCategories.id), eq(services.active, true)))
    .groupBy(serviceCategories.id)
    .orderBy(asc(serviceCategories.position), asc(serviceCategories.id));
}

export async function findCategory(db: DbTx, categoryId: number) {
  const [row] = await db.select().from(serviceCategories).where(eq(serviceCategories.id, categoryId)).limit(1);
  return row;
}

export async function listServices(
  db: DbTx,
  filters: { categoryId?: number; q?: string },
  limit: number,
  offset: number,
) {
  const where = and(
    eq(services.active, true),
    filters.categoryId === undefined ? undefined : eq(services.categoryId, filters.categoryId),
    filters.q === undefined
      ? undefined
      : or(foldedContains(services.name, filters.q), foldedContains(sql`coalesce(${services.description}, '')`, filters.q)),
  );
  return pageOfServices(db, where, limit, offset);
}

/** An active service with its category; an inactive one is not found. */
export async function findActiveService(db: DbTx, serviceId: number) {
  const [row] = await db
    .select({ service: services, category: { id: serviceCategories.id, slug: serviceCategories.slug, name: serviceCategories.name } })
    .from(services)
    .innerJoin(serviceCategories, eq(serviceCategories.id, services.categoryId))
    .where(and(eq(services.id, serviceId), eq(services.active, true)))
    .limit(1);
  return row;
}

function postalCodeMatch(postalCode: string): SQL {
  // A full code uses the GIN index on the array; a prefix looks inside each row's few codes.
  if (postalCode.length === 5) return sql`${cities.postalCodes} @> array[${postalCode}]::text[]`;
  return sql`exists (select 1 from unnest(${cities.postalCodes}) as pc(code) where pc.code like ${`${postalCode}%`})`;
}

/**
 * Cities matching a name (case, accents, hyphens and apostrophes ignored) and/or a postal code
 * (exact or leading digits). Names that start with the text come first, then the most populous.
 */
export async function listCities(db: DbTx, filters: { q?: string; postalCode?: string }, limit: number, offset: number) {
  const { q, postalCode } = filters;
  const nameIsPostalCode = q !== undefined && /^\d{2,5}$/.test(q);
  const where = and(
    q === undefined ? undefined : nameIsPostalCode ? postalCodeMatch(q) : foldedContains(cities.name, q),
    postalCode === undefined ? undefined : postalCodeMatch(postalCode),
  );
  const order: SQL[] = [];
  if (q !== undefined && !nameIsPostalCode) order.push(sql`(${foldedStartsWith(cities.name, q)}) desc`);
  order.push(sql`${cities.population} desc nulls last`, asc(cities.name), asc(cities.id));
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(cities)
      .where(where)
      .orderBy(...order)
      .limit(limit)
      .offset(offset),
    db.select({ n: count() }).from(cities).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}

export async function findCity(db: DbTx, cityId: number) {
  const [row] = await db.select().from(cities).where(eq(cities.id, cityId)).limit(1);
  return row;
}

/** A page of services matching `where`, each with its category, in catalogue order, and how many match. */
export async function pageOfServices(db: DbTx, where: SQL | undefined, limit: number, offset: number) {
  const [rows, [total]] = await Promise.all([
    db
      .select({ service: services, category: { id: serviceCategories.id, slug: serviceCategories.slug, name: serviceCategories.name } })
      .from(services)
      .innerJoin(serviceCategories, eq(serviceCategories.id, services.categoryId))
      .where(where)
      .orderBy(asc(serviceCategories.position), asc(serviceCategories.id), asc(services.position), asc(services.id))
      .limit(limit)
      .offset(offset),
    db.select({ n: count() }).from(services).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}
