import { and, asc, count, eq, isNull, or, sql, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import {
  availabilities,
  favourites,
  galleryPhotos,
  prestataireProfiles,
  prestataireServices,
  serviceCategories,
  services,
  users,
  type PrestataireProfile,
} from '../../db/schema/index.js';
import { foldedContains } from '../catalogue/index.js';

/** The orders a search can be sorted in. */
export const SEARCH_SORTS = ['distance', 'rating', 'price'] as const;
export type SearchSort = (typeof SEARCH_SORTS)[number];

/**
 * Who the public sees: validated profiles of active, undeleted prestataire accounts. Suspended
 * (by compliance), pending, rejected, banned and deleted ones drop out at once.
 */
export function visiblePrestataire(): SQL {
  return and(
    eq(prestataireProfiles.validationStatus, 'validated'),
    eq(users.role, 'prestataire'),
    eq(users.status, 'active'),
    isNull(users.deletedAt),
  )!;
}

const float = (value: number) => sql`${value}::double precision`;

/**
 * Points on the Earth as earthdistance models them (a sphere of radius earth(), 6378.168 km). The
 * profile's point is its stored `location` column, which prestataire_profiles_location_idx indexes;
 * null without coordinates.
 */
const profilePoint = sql`${prestataireProfiles.location}`;
const point = (origin: { latitude: number; longitude: number }) => sql`ll_to_earth(${float(origin.latitude)}, ${float(origin.longitude)})`;

/** Great-circle distance in km from a point to the profile's coordinates (null when it has none). */
function distanceKm(origin: { latitude: number; longitude: number }): SQL<number | null> {
  return sql<number | null>`(earth_distance(${point(origin)}, ${profilePoint}) / 1000)`;
}

/**
 * Profiles within `radiusKm` of a point: the cube around the circle (earth_box, answered by the
 * GiST index), then the exact distance, since the cube's corners reach beyond the circle.
 */
function withinRadius(origin: { latitude: number; longitude: number }, radiusKm: number): SQL {
  return sql`(earth_box(${point(origin)}, ${float(radiusKm * 1000)}) @> ${profilePoint} and ${distanceKm(origin)} <= ${float(radiusKm)})`;
}

export interface SearchFilters {
  origin?: { latitude: number; longitude: number };
  radiusKm: number;
  serviceId?: number;
  categoryId?: number;
  q?: string;
  minRating?: number;
  sort: SearchSort;
}

export interface SearchRow {
  id: number;
  businessName: string;
  description: string | null;
  city: string;
  postalCode: string;
  latitude: number | null;
  longitude: number | null;
  distanceKm: number | null;
  ratingAverage: number | null;
  ratingCount: number;
  hourlyRateCents: number | null;
  servicePriceCents: number | null;
  photoKey: string | null;
}

export interface OfferedService {
  id: number;
  slug: string;
  name: string;
}

export async function search(db: DbTx, filters: SearchFilters, limit: number, offset: number) {
  const { origin, serviceId, categoryId, q, minRating } = filters;
  const distance = origin ? distanceKm(origin) : sql<number | null>`null::double precision`;
  const servicePrice = serviceId
    ? sql<number | null>`(select ${prestataireServices.priceCents} from ${prestataireServices}
        where ${prestataireServices.prestataireId} = ${prestataireProfiles.userId} and ${prestataireServices.serviceId} = ${serviceId})`
    : sql<number | null>`null::integer`;

  const where = and(
    visiblePrestataire(),
    origin ? withinRadius(origin, filters.radiusKm) : undefined,
    serviceId
      ? sql`exists (select 1 from ${prestataireServices} where ${prestataireServices.prestataireId} = ${prestataireProfiles.userId}
          and ${prestataireServices.serviceId} = ${serviceId})`
      : undefined,
    categoryId
      ? sql`exists (select 1 from ${prestataireServices} join ${services} on ${services.id} = ${prestataireServices.serviceId}
          where ${prestataireServices.prestataireId} = ${prestataireProfiles.userId}
          and ${services.categoryId} = ${categoryId} and ${services.active})`
      : undefined,
    q ? or(foldedContains(prestataireProfiles.businessName, q), foldedContains(sql`coalesce(${prestataireProfiles.description}, '')`, q)) : undefined,
    minRating ? sql`${prestataireProfiles.ratingAverage} >= ${float(minRating)}` : undefined,
  );

  const order: SQL[] = [];
  if (filters.sort === 'distance') order.push(sql`${distance} asc nulls last`);
  else if (filters.sort === 'rating') order.push(sql`${prestataireProfiles.ratingAverage} desc nulls last`, sql`${prestataireProfiles.ratingCount} desc`);
  // A price for the searched service compares like with like; without one, the hourly rate does.
  else if (serviceId) order.push(sql`${servicePrice} asc nulls last`);
  else order.push(sql`${prestataireProfiles.hourlyRateCents} asc nulls last`);
  order.push(asc(prestataireProfiles.userId));

  // One statement: the page, the total over the whole match (a window count, computed before the
  // limit) and each listed prestataire's services (evaluated for the page's rows only).
  const rows = await db
    .select({
      id: prestataireProfiles.userId,
      businessName: prestataireProfiles.businessName,
      description: prestataireProfiles.description,
      city: prestataireProfiles.city,
      postalCode: prestataireProfiles.postalCode,
      latitude: prestataireProfiles.latitude,
      longitude: prestataireProfiles.longitude,
      distanceKm: distance,
      ratingAverage: prestataireProfiles.ratingAverage,
      ratingCount: prestataireProfiles.ratingCount,
      hourlyRateCents: prestataireProfiles.hourlyRateCents,
      servicePriceCents: servicePrice,
      photoKey: users.photoKey,
      services: sql<OfferedService[]>`(select coalesce(json_agg(json_build_object('id', ${services.id}, 'slug', ${services.slug}, 'name', ${services.name})
          order by ${serviceCategories.position}, ${services.position}, ${services.id}), '[]'::json)
          from ${prestataireServices}
          join ${services} on ${services.id} = ${prestataireServices.serviceId}
          join ${serviceCategories} on ${serviceCategories.id} = ${services.categoryId}
         where ${prestataireServices.prestataireId} = ${prestataireProfiles.userId} and ${services.active})`,
      total: sql<number>`(count(*) over ())::int`,
    })
    .from(prestataireProfiles)
    .innerJoin(users, eq(users.id, prestataireProfiles.userId))
    .where(where)
    .orderBy(...order)
    .limit(limit)
    .offset(offset);
  // A page past the end has no row to carry the total: count it alone.
  if (rows.length === 0 && offset > 0) {
    const [counted] = await db
      .select({ n: count() })
      .from(prestataireProfiles)
      .innerJoin(users, eq(users.id, prestataireProfiles.userId))
      .where(where);
    return { rows: [], total: counted?.n ?? 0 };
  }
  return { rows: rows.map(({ total: _, ...row }) => row) satisfies (SearchRow & { services: OfferedService[] })[], total: rows[0]?.total ?? 0 };
}

/** The profile of a publicly visible prestataire, or undefined. */
export async function findVisible(db: DbTx, prestataireId: number) {
  const [row] = await db
    .select({ profile: prestataireProfiles, photoKey: users.photoKey, memberSince: users.createdAt })
    .from(prestataireProfiles)
    .innerJoin(users, eq(users.id, prestataireProfiles.userId))
    .where(and(eq(prestataireProfiles.userId, prestataireId), visiblePrestataire()))
    .limit(1);
  return row;
}

export interface ServiceOfPrestataire {
  id: number;
  slug: string;
  name: string;
  description: string | null;
  category: { id: number; slug: string; name: string };
  ownPriceCents: number | null;
  ownDurationMinutes: number | null;
  cataloguePriceCents: number | null;
  catalogueDurationMinutes: number;
  currency: string;
}

export interface PrestataireDetail {
  profile: PrestataireProfile;
  photoKey: string | null;
  memberSince: Date;
  services: ServiceOfPrestataire[];
  gallery: { id: number; storageKey: string; caption: string | null }[];
  openingHours: { dayOfWeek: number; startTime: string; endTime: string }[];
}

export async function detailsOf(db: DbTx, prestataireId: number) {
  const [offered, gallery, openingHours] = await Promise.all([
    db
      .select({
        id: services.id,
        slug: services.slug,
        name: services.name,
        description: services.description,
        category: { id: serviceCategories.id, slug: serviceCategories.slug, name: serviceCategories.name },
        ownPriceCents: prestataireServices.priceCents,
        ownDurationMinutes: prestataireServices.durationMinutes,
        cataloguePriceCents: services.priceCents,
        catalogueDurationMinutes: services.durationMinutes,
        currency: services.currency,
      })
      .from(prestataireServices)
      .innerJoin(services, eq(services.id, prestataireServices.serviceId))
      .innerJoin(serviceCategories, eq(serviceCategories.id, services.categoryId))
      .where(and(eq(prestataireServices.prestataireId, prestataireId), eq(services.active, true)))
      .orderBy(asc(serviceCategories.position), asc(services.position), asc(services.id)),
    db
      .select({ id: galleryPhotos.id, storageKey: galleryPhotos.storageKey, caption: galleryPhotos.caption })
      .from(galleryPhotos)
      .where(eq(galleryPhotos.prestataireId, prestataireId))
      .orderBy(asc(galleryPhotos.position), asc(galleryPhotos.id)),
    db
      .select({ dayOfWeek: availabilities.dayOfWeek, startTime: availabilities.startTime, endTime: availabilities.endTime })
      .from(availabilities)
      .where(eq(availabilities.prestataireId, prestataireId))
      .orderBy(asc(availabilities.dayOfWeek), asc(availabilities.startTime)),
  ]);
  return { services: offered, gallery, openingHours };
}

export async function isFavourite(db: DbTx, clientId: number, prestataireId: number) {
  const [row] = await db
    .select({ n: sql`1` })
    .from(favourites)
    .where(and(eq(favourites.clientId, clientId), eq(favourites.prestataireId, prestataireId)))
    .limit(1);
  return row !== undefined;
}

/** Removes the favourite; answers whether there was one. */
export async function deleteFavourite(db: DbTx, clientId: number, prestataireId: number) {
  const rows = await db
    .delete(favourites)
    .where(and(eq(favourites.clientId, clientId), eq(favourites.prestataireId, prestataireId)))
    .returning({ clientId: favourites.clientId });
  return rows.length > 0;
}

/** Adds the favourite; a concurrent identical insert is not an error. */
export async function insertFavourite(db: DbTx, clientId: number, prestataireId: number) {
  await db.insert(favourites).values({ clientId, prestataireId }).onConflictDoNothing();
}
