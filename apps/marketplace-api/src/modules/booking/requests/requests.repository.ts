import { and, asc, count, desc, eq, inArray, isNull, or, sql, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../../db/index.js';
import {
  appointments,
  cities,
  offers,
  prestataireProfiles,
  prestataireServices,
  SERVICE_REQUEST_STATUSES,
  serviceRequestPhotos,
  serviceRequests,
  services,
  users,
  vehicles,
  type ServiceRequest,
  type ServiceRequestStatus,
} from '../../../db/schema/index.js';
import { defineStateMachine } from '../../../lib/transitions.js';

/**
 * A service request's life (DESIGN.md §6): open → quoted → accepted → completed; open|quoted →
 * cancelled | expired | refused. Every move goes through `transition`.
 */
export const serviceRequestMachine = defineStateMachine({
  table: serviceRequests,
  key: serviceRequests.id,
  state: serviceRequests.status,
  states: SERVICE_REQUEST_STATUSES,
  label: 'Service request',
  noun: 'service request',
  stateName: 'status',
  subjectType: 'service_request',
  audit: (r) => ({
    status: r.status,
    client_id: r.clientId,
    prestataire_id: r.prestataireId,
    service_id: r.serviceId,
    cancel_reason: r.cancelReason,
    refusal_reason: r.refusalReason,
  }),
  stamp: () => ({ updatedAt: sql`now()` }),
});

/** The states in which a request still takes offers, an acceptance or a cancellation. */
export const LIVE_REQUEST_STATUSES = ['open', 'quoted'] as const satisfies readonly ServiceRequestStatus[];

/**
 * The outer request's columns, qualified by hand: inside a subquery of a select list, drizzle writes
 * a column without its table, and `"id"` would then name the subquery's own table's column.
 */
const outer = {
  id: sql.raw('"service_requests"."id"'),
  serviceId: sql.raw('"service_requests"."service_id"'),
  latitude: sql.raw('"service_requests"."latitude"'),
  longitude: sql.raw('"service_requests"."longitude"'),
};
const requestPoint = sql`ll_to_earth(${outer.latitude}, ${outer.longitude})`;
const profilePoint = sql`ll_to_earth(${prestataireProfiles.latitude}, ${prestataireProfiles.longitude})`;

/**
 * The request lies within the prestataire's service radius and names a service it offers, the
 * prestataire being validated (so neither suspended nor pending) with an active account. No
 * subquery here refers to the request: the prestataire's services, base and radius are each read
 * once per statement (an InitPlan), and the box around the circle is then an index condition on
 * the GiST index of open requests, the exact distance checked after. Written as
 * a correlated EXISTS, the same test ran once per live request: 0.8 s for a prestataire's feed
 * among 50 000 of them, against 8 ms.
 */
function inReachOf(prestataireId: number): SQL {
  const base = sql`(select ${prestataireProfiles.location} from ${prestataireProfiles} where ${prestataireProfiles.userId} = ${prestataireId})`;
  const radiusMetres = sql`(select ${prestataireProfiles.serviceRadiusKm}::double precision * 1000 from ${prestataireProfiles}
    where ${prestataireProfiles.userId} = ${prestataireId})`;
  return sql`(${outer.serviceId} in (
      select ${prestataireServices.serviceId} from ${prestataireServices}
      join ${prestataireProfiles} on ${prestataireProfiles.userId} = ${prestataireServices.prestataireId}
      join ${users} on ${users.id} = ${prestataireProfiles.userId}
      where ${prestataireServices.prestataireId} = ${prestataireId}
        and ${prestataireProfiles.validationStatus} = 'validated'
        and ${users.status} = 'active' and ${users.deletedAt} is null)
    and earth_box(${base}, ${radiusMetres}) @> ${requestPoint}
    and earth_distance(${base}, ${requestPoint}) <= ${radiusMetres})`;
}

/** Whether the prestataire has made an offer on the request: a column of a listed row. */
const hasOffered = (prestataireId: number) =>
  sql`exists (select 1 from ${offers} where ${offers.serviceRequestId} = ${outer.id} and ${offers.prestataireId} = ${prestataireId})`;

/**
 * The same as a condition on which requests to read: the ids of the prestataire's offers are read
 * once per statement (an InitPlan) and looked up by primary key, so that beside the other
 * conditions of a scope (an OR) the plan stays a union of index scans instead of testing every
 * request.
 */
const offeredOn = (prestataireId: number) =>
  sql`${outer.id} = any(array(select ${offers.serviceRequestId} from ${offers} where ${offers.prestataireId} = ${prestataireId}))`;

/**
 * What a prestataire's list shows: the requests aimed at it, and the open or quoted requests that
 * are aimed at no one, within its radius, for a service it offers.
 */
export function listedFor(prestataireId: number): SQL {
  return or(
    eq(serviceRequests.prestataireId, prestataireId),
    and(isNull(serviceRequests.prestataireId), inArray(serviceRequests.status, [...LIVE_REQUEST_STATUSES]), inReachOf(prestataireId)),
  )!;
}

/** A client's own requests. */
export function requestOfClient(clientId: number): SQL {
  return eq(serviceRequests.clientId, clientId);
}

/** What a prestataire may open: its list, and any request it has made an offer on. */
export function visibleTo(prestataireId: number): SQL {
  return or(listedFor(prestataireId), offeredOn(prestataireId))!;
}

/** The distance in km from the prestataire's base to the request (null without coordinates). */
function distanceFrom(prestataireId: number): SQL<number | null> {
  return sql<number | null>`(select earth_distance(${profilePoint}, ${requestPoint}) / 1000 from ${prestataireProfiles}
    where ${prestataireProfiles.userId} = ${prestataireId})`;
}

export async function findRequest(db: DbTx, id: number, where?: SQL) {
  const [row] = await db
    .select()
    .from(serviceRequests)
    .where(and(eq(serviceRequests.id, id), where))
    .limit(1);
  return row;
}

/** The request, locked for the rest of the transaction (a move, an edit, an accept). */
export async function lockRequest(db: DbTx, id: number) {
  const [row] = await db.select().from(serviceRequests).where(eq(serviceRequests.id, id)).for('update');
  return row;
}

export interface RequestListFilters {
  status?: ServiceRequestStatus;
  serviceId?: number;
}

/** A page of requests matching `scope`, newest first, with offer counts and appointment ids. */
export async function listRequests(
  db: DbTx,
  scope: SQL | undefined,
  filters: RequestListFilters,
  limit: number,
  offset: number,
  opts: { prestataireId?: number } = {},
) {
  const where = and(
    scope,
    filters.status ? eq(serviceRequests.status, filters.status) : undefined,
    filters.serviceId ? eq(serviceRequests.serviceId, filters.serviceId) : undefined,
  );
  const me = opts.prestataireId;
  const [rows, [total]] = await Promise.all([
    db
      .select({
        request: serviceRequests,
        offersCount: sql<number>`(select count(*)::int from ${offers} where ${offers.serviceRequestId} = ${outer.id})`,
        appointmentId: sql<number | null>`(select ${appointments.id} from ${appointments} where ${appointments.serviceRequestId} = ${outer.id})`,
        distanceKm: me ? distanceFrom(me) : sql<number | null>`null::double precision`,
        hasOffered: me ? sql<boolean>`${hasOffered(me)}` : sql<boolean>`false`,
      })
      .from(serviceRequests)
      .where(where)
      .orderBy(desc(serviceRequests.createdAt), desc(serviceRequests.id))
      .limit(limit)
      .offset(offset),
    db.select({ n: count() }).from(serviceRequests).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}

/** One request with the prestataire's view of it (distance, whether it offered). */
export async function findForPrestataire(db: DbTx, id: number, prestataireId: number) {
  const [row] = await db
    .select({ request: serviceRequests, distanceKm: distanceFrom(prestataireId), hasOffered: sql<boolean>`${hasOffered(prestataireId)}` })
    .from(serviceRequests)
    .where(and(eq(serviceRequests.id, id), visibleTo(prestataireId)))
    .limit(1);
  return row;
}

export async function insertRequest(db: DbTx, values: typeof serviceRequests.$inferInsert): Promise<ServiceRequest> {
  const [row] = await db.insert(serviceRequests).values(values).returning();
  return row!;
}

type RequestChanges = Partial<
  Pick<
    typeof serviceRequests.$inferInsert,
    'vehicleId' | 'serviceId' | 'prestataireId' | 'description' | 'latitude' | 'longitude' | 'cityId' | 'preferredDates'
  >
>;

export async function updateRequest(db: DbTx, id: number, changes: RequestChanges) {
  const [row] = await db
    .update(serviceRequests)
    .set({ ...changes, updatedAt: sql`now()` })
    .where(eq(serviceRequests.id, id))
    .returning();
  return row!;
}

export async function deleteRequest(db: DbTx, id: number) {
  await db.delete(serviceRequests).where(eq(serviceRequests.id, id));
}

/** How many offers a request has had, in any state. */
export async function countOffers(db: DbTx, requestId: number) {
  const [row] = await db.select({ n: count() }).from(offers).where(eq(offers.serviceRequestId, requestId));
  return row?.n ?? 0;
}

/** The caller's live vehicle, or undefined (someone else's, deleted, unknown). */
export async function findOwnVehicle(db: DbTx, ownerId: number, vehicleId: number) {
  const [row] = await db
    .select({ id: vehicles.id })
    .from(vehicles)
    .where(and(eq(vehicles.id, vehicleId), eq(vehicles.ownerId, ownerId), isNull(vehicles.deletedAt)))
    .limit(1);
  return row;
}

export async function findActiveService(db: DbTx, serviceId: number) {
  const [row] = await db
    .select()
    .from(services)
    .where(and(eq(services.id, serviceId), eq(services.active, true)))
    .limit(1);
  return row;
}

export async function findCity(db: DbTx, cityId: number) {
  const [row] = await db.select().from(cities).where(eq(cities.id, cityId)).limit(1);
  return row;
}

/**
 * A prestataire that may receive a direct request for the service: validated, with an active
 * account, offering it. Answers its own price and duration for the service (null where it uses the
 * catalogue's).
 */
export async function findBookablePrestataire(db: DbTx, prestataireId: number, serviceId: number) {
  const [row] = await db
    .select({
      id: prestataireProfiles.userId,
      businessName: prestataireProfiles.businessName,
      priceCents: prestataireServices.priceCents,
      durationMinutes: prestataireServices.durationMinutes,
    })
    .from(prestataireProfiles)
    .innerJoin(users, eq(users.id, prestataireProfiles.userId))
    .innerJoin(
      prestataireServices,
      and(eq(prestataireServices.prestataireId, prestataireProfiles.userId), eq(prestataireServices.serviceId, serviceId)),
    )
    .where(
      and(
        eq(prestataireProfiles.userId, prestataireId),
        eq(prestataireProfiles.validationStatus, 'validated'),
        eq(users.role, 'prestataire'),
        eq(users.status, 'active'),
        isNull(users.deletedAt),
      ),
    )
    .limit(1);
  return row;
}

/** Whether the user is a validated prestataire with an active account (who may use /prestataire/requests and make offers). */
export async function isActivePrestataire(db: DbTx, userId: number) {
  const [row] = await db
    .select({ id: users.id })
    .from(users)
    .innerJoin(prestataireProfiles, eq(prestataireProfiles.userId, users.id))
    .where(
      and(
        eq(users.id, userId),
        eq(users.role, 'prestataire'),
        eq(users.status, 'active'),
        isNull(users.deletedAt),
        eq(prestataireProfiles.validationStatus, 'validated'),
      ),
    )
    .limit(1);
  return row !== undefined;
}

/** The service's own price and duration for a prestataire, falling back to the catalogue's. */
export async function pricingOf(db: DbTx, prestataireId: number, serviceId: number) {
  const [row] = await db
    .select({
      priceCents: sql<number | null>`coalesce(${prestataireServices.priceCents}, ${services.priceCents})`,
      durationMinutes: sql<number>`coalesce(${prestataireServices.durationMinutes}, ${services.durationMinutes})`,
      currency: services.currency,
    })
    .from(services)
    .leftJoin(prestataireServices, and(eq(prestataireServices.serviceId, services.id), eq(prestataireServices.prestataireId, prestataireId)))
    .where(eq(services.id, serviceId))
    .limit(1);
  return row;
}

// Photos

export async function listPhotos(db: DbTx, requestIds: number[]) {
  if (requestIds.length === 0) return [];
  return db
    .select()
    .from(serviceRequestPhotos)
    .where(inArray(serviceRequestPhotos.serviceRequestId, requestIds))
    .orderBy(asc(serviceRequestPhotos.id));
}

export async function insertPhotos(db: DbTx, requestId: number, keys: string[]) {
  if (keys.length === 0) return [];
  return db
    .insert(serviceRequestPhotos)
    .values(keys.map((storageKey) => ({ serviceRequestId: requestId, storageKey })))
    .returning();
}

// Appointments: rows are created here when a request is accepted; the appointments module moves them.

export async function insertAppointment(db: DbTx, values: typeof appointments.$inferInsert) {
  const [row] = await db.insert(appointments).values(values).returning();
  return row!;
}

export async function findAppointmentOfRequest(db: DbTx, requestId: number) {
  const [row] = await db.select().from(appointments).where(eq(appointments.serviceRequestId, requestId)).limit(1);
  return row;
}

