import { and, asc, count, desc, eq, gt, gte, isNull, lt, ne, sql, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import {
  appointments,
  notifications,
  offers,
  prestataireProfiles,
  prestataireServices,
  serviceRequests,
  services,
  users,
  vehicles,
} from '../../db/schema/index.js';

export async function findProfile(db: DbTx, prestataireId: number) {
  const [row] = await db
    .select({
      timezone: prestataireProfiles.timezone,
      latitude: prestataireProfiles.latitude,
      longitude: prestataireProfiles.longitude,
      serviceRadiusKm: prestataireProfiles.serviceRadiusKm,
      validationStatus: prestataireProfiles.validationStatus,
    })
    .from(prestataireProfiles)
    .where(eq(prestataireProfiles.userId, prestataireId))
    .limit(1);
  return row;
}

const float = (value: number) => sql`${value}::double precision`;
const requestPoint = sql`ll_to_earth(${serviceRequests.latitude}, ${serviceRequests.longitude})`;

export interface Workshop {
  prestataireId: number;
  /** Where the prestataire works from and how far it goes; without coordinates only direct requests reach it. */
  origin: { latitude: number; longitude: number; radiusKm: number } | null;
}

/**
 * The requests a prestataire may answer and has not: open or quoted ones for a service it offers
 * within its radius (the cube around the circle from the GiST index, then the exact distance), and
 * open ones aimed at it. Unexpired, and none it has made an offer on.
 */
function newRequestsWhere(w: Workshop, now: Date): SQL {
  const near = w.origin
    ? sql`(${serviceRequests.prestataireId} is null
        and ${serviceRequests.status} in ('open', 'quoted')
        and exists (select 1 from ${prestataireServices} where ${prestataireServices.prestataireId} = ${w.prestataireId}
          and ${prestataireServices.serviceId} = ${serviceRequests.serviceId})
        and earth_box(ll_to_earth(${float(w.origin.latitude)}, ${float(w.origin.longitude)}), ${float(w.origin.radiusKm * 1000)}) @> ${requestPoint}
        and earth_distance(ll_to_earth(${float(w.origin.latitude)}, ${float(w.origin.longitude)}), ${requestPoint}) <= ${float(w.origin.radiusKm * 1000)})`
    : sql`false`;
  return and(
    sql`(${near} or (${serviceRequests.prestataireId} = ${w.prestataireId} and ${serviceRequests.status} = 'open'))`,
    gt(serviceRequests.expiresAt, now),
    sql`not exists (select 1 from ${offers} where ${offers.serviceRequestId} = ${serviceRequests.id} and ${offers.prestataireId} = ${w.prestataireId})`,
  )!;
}

export async function newRequests(db: DbTx, w: Workshop, now: Date, limit: number) {
  const where = newRequestsWhere(w, now);
  const distance = w.origin
    ? sql<number>`(earth_distance(ll_to_earth(${float(w.origin.latitude)}, ${float(w.origin.longitude)}), ${requestPoint}) / 1000)`
    : sql<number | null>`null::double precision`;
  const [rows, [total]] = await Promise.all([
    db
      .select({
        request: serviceRequests,
        distanceKm: distance,
        service: { id: services.id, name: services.name },
        vehicle: { make: vehicles.make, model: vehicles.model, year: vehicles.year },
      })
      .from(serviceRequests)
      .innerJoin(services, eq(services.id, serviceRequests.serviceId))
      .innerJoin(vehicles, eq(vehicles.id, serviceRequests.vehicleId))
      .where(where)
      .orderBy(desc(serviceRequests.createdAt), desc(serviceRequests.id))
      .limit(limit),
    db.select({ n: count() }).from(serviceRequests).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}

/** The prestataire's offers still awaiting the client, newest first. */
export async function pendingOffers(db: DbTx, prestataireId: number, limit: number) {
  const where = and(eq(offers.prestataireId, prestataireId), eq(offers.status, 'pending'));
  const [rows, [total]] = await Promise.all([
    db
      .select({
        offer: offers,
        request: { id: serviceRequests.id, status: serviceRequests.status },
        service: { id: services.id, name: services.name },
      })
      .from(offers)
      .innerJoin(serviceRequests, eq(serviceRequests.id, offers.serviceRequestId))
      .innerJoin(services, eq(services.id, serviceRequests.serviceId))
      .where(where)
      .orderBy(desc(offers.createdAt), desc(offers.id))
      .limit(limit),
    db.select({ n: count() }).from(offers).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}

/** The prestataire's appointments starting in [from, to), by start, each with what its agenda shows. */
export async function appointmentsBetween(db: DbTx, prestataireId: number, from: Date, to: Date, includeCancelled: boolean) {
  return db
    .select({
      appointment: appointments,
      client: { id: users.id, firstName: users.firstName },
      vehicle: { id: vehicles.id, make: vehicles.make, model: vehicles.model, plate: vehicles.plate },
      service: { id: services.id, name: services.name },
    })
    .from(appointments)
    .innerJoin(users, eq(users.id, appointments.clientId))
    .innerJoin(vehicles, eq(vehicles.id, appointments.vehicleId))
    .innerJoin(services, eq(services.id, appointments.serviceId))
    .where(
      and(
        eq(appointments.prestataireId, prestataireId),
        gte(appointments.startsAt, from),
        lt(appointments.startsAt, to),
        includeCancelled ? undefined : ne(appointments.status, 'cancelled'),
      ),
    )
    .orderBy(asc(appointments.startsAt), asc(appointments.id));
}

export async function unreadNotifications(db: DbTx, userId: number): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(notifications)
    .where(and(eq(notifications.userId, userId), isNull(notifications.readAt)));
  return row?.n ?? 0;
}

export type AgendaRow = Awaited<ReturnType<typeof appointmentsBetween>>[number];
export type NewRequestRow = Awaited<ReturnType<typeof newRequests>>['rows'][number];
export type PendingOfferRow = Awaited<ReturnType<typeof pendingOffers>>['rows'][number];

