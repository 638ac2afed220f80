import { and, asc, count, desc, eq, gte, lt, sql, type SQL } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import type { DbTx } from '../../../db/index.js';
import {
  appointments,
  offers,
  prestataireProfiles,
  serviceRequestPhotos,
  serviceRequests,
  services,
  users,
  vehicles,
  type AppointmentStatus,
  type ServiceRequestStatus,
} from '../../../db/schema/index.js';

const clients = alias(users, 'client');
const prestataires = alias(users, 'prestataire');

const clientColumns = { id: clients.id, firstName: clients.firstName, lastName: clients.lastName, email: clients.email };
const prestataireColumns = {
  id: prestataires.id,
  firstName: prestataires.firstName,
  lastName: prestataires.lastName,
  email: prestataires.email,
  businessName: prestataireProfiles.businessName,
};
const vehicleColumns = { id: vehicles.id, make: vehicles.make, model: vehicles.model, year: vehicles.year, plate: vehicles.plate };
const serviceColumns = { id: services.id, slug: services.slug, name: services.name };

export interface LifecycleFilters {
  clientId?: number;
  prestataireId?: number;
  from?: Date;
  to?: Date;
}

/** Requests newest first, with their client, vehicle and service, and how many offers each has. */
export async function listRequests(
  db: DbTx,
  filters: LifecycleFilters & { status?: ServiceRequestStatus; serviceId?: number },
  limit: number,
  offset: number,
) {
  const where = and(
    filters.status === undefined ? undefined : eq(serviceRequests.status, filters.status),
    filters.clientId === undefined ? undefined : eq(serviceRequests.clientId, filters.clientId),
    filters.serviceId === undefined ? undefined : eq(serviceRequests.serviceId, filters.serviceId),
    // A prestataire's requests: those aimed at it and those it made an offer on.
    filters.prestataireId === undefined
      ? undefined
      : sql`(${serviceRequests.prestataireId} = ${filters.prestataireId} or exists (select 1 from ${offers}
          where ${offers.serviceRequestId} = ${serviceRequests.id} and ${offers.prestataireId} = ${filters.prestataireId}))`,
    filters.from === undefined ? undefined : gte(serviceRequests.createdAt, filters.from),
    filters.to === undefined ? undefined : lt(serviceRequests.createdAt, filters.to),
  );
  const [rows, [total]] = await Promise.all([
    requestQuery(db)
      .where(where)
      .orderBy(desc(serviceRequests.createdAt), desc(serviceRequests.id))
      .limit(limit)
      .offset(offset),
    db.select({ n: count() }).from(serviceRequests).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}

function requestQuery(db: DbTx) {
  return db
    .select({
      request: serviceRequests,
      client: clientColumns,
      vehicle: vehicleColumns,
      service: serviceColumns,
      offersCount: sql<number>`(select count(*)::int from ${offers} where ${offers.serviceRequestId} = ${serviceRequests.id})`,
    })
    .from(serviceRequests)
    .innerJoin(clients, eq(clients.id, serviceRequests.clientId))
    .innerJoin(vehicles, eq(vehicles.id, serviceRequests.vehicleId))
    .innerJoin(services, eq(services.id, serviceRequests.serviceId))
    .$dynamic();
}

export async function findRequest(db: DbTx, requestId: number) {
  const [row] = await requestQuery(db).where(eq(serviceRequests.id, requestId)).limit(1);
  return row;
}

/** A request's offers, oldest first, each with its prestataire. */
export async function offersOf(db: DbTx, requestId: number) {
  return db
    .select({ offer: offers, prestataire: prestataireColumns })
    .from(offers)
    .innerJoin(prestataires, eq(prestataires.id, offers.prestataireId))
    .leftJoin(prestataireProfiles, eq(prestataireProfiles.userId, offers.prestataireId))
    .where(eq(offers.serviceRequestId, requestId))
    .orderBy(asc(offers.createdAt), asc(offers.id));
}

export async function photosOf(db: DbTx, requestId: number) {
  return db
    .select()
    .from(serviceRequestPhotos)
    .where(eq(serviceRequestPhotos.serviceRequestId, requestId))
    .orderBy(asc(serviceRequestPhotos.createdAt), asc(serviceRequestPhotos.id));
}

function appointmentQuery(db: DbTx) {
  return db
    .select({ appointment: appointments, client: clientColumns, prestataire: prestataireColumns, vehicle: vehicleColumns, service: serviceColumns })
    .from(appointments)
    .innerJoin(clients, eq(clients.id, appointments.clientId))
    .innerJoin(prestataires, eq(prestataires.id, appointments.prestataireId))
    .leftJoin(prestataireProfiles, eq(prestataireProfiles.userId, appointments.prestataireId))
    .innerJoin(vehicles, eq(vehicles.id, appointments.vehicleId))
    .innerJoin(services, eq(services.id, appointments.serviceId))
    .$dynamic();
}

export async function appointmentOfRequest(db: DbTx, requestId: number) {
  const [row] = await appointmentQuery(db).where(eq(appointments.serviceRequestId, requestId)).limit(1);
  return row;
}

/** Appointments by start, latest first, with both parties, the vehicle and the service. */
export async function listAppointments(
  db: DbTx,
  filters: LifecycleFilters & { status?: AppointmentStatus },
  limit: number,
  offset: number,
) {
  const conditions: (SQL | undefined)[] = [
    filters.status === undefined ? undefined : eq(appointments.status, filters.status),
    filters.clientId === undefined ? undefined : eq(appointments.clientId, filters.clientId),
    filters.prestataireId === undefined ? undefined : eq(appointments.prestataireId, filters.prestataireId),
    filters.from === undefined ? undefined : gte(appointments.startsAt, filters.from),
    filters.to === undefined ? undefined : lt(appointments.startsAt, filters.to),
  ];
  const where = and(...conditions);
  const [rows, [total]] = await Promise.all([
    appointmentQuery(db)
      .where(where)
      .orderBy(desc(appointments.startsAt), desc(appointments.id))
      .limit(limit)
      .offset(offset),
    db.select({ n: count() }).from(appointments).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}

export async function findAppointment(db: DbTx, appointmentId: number) {
  const [row] = await appointmentQuery(db).where(eq(appointments.id, appointmentId)).limit(1);
  return row;
}

export type RequestRow = NonNullable<Awaited<ReturnType<typeof findRequest>>>;
export type OfferRow = Awaited<ReturnType<typeof offersOf>>[number];
export type AppointmentRow = NonNullable<Awaited<ReturnType<typeof findAppointment>>>;
