import { aliasedTable, and, count, desc, eq, gte, inArray, lt, sql, type Placeholder, type SQL } from 'drizzle-orm';
import { preparedOnce } from '@repo/db';
import type { DbTx } from '../../../db/index.js';
import {
  APPOINTMENT_STATUSES,
  appointments,
  prestataireProfiles,
  services,
  users,
  vehicles,
  type Appointment,
  type AppointmentStatus,
} from '../../../db/schema/index.js';
import { defineStateMachine } from '../../../lib/transitions.js';

/**
 * An appointment's life (DESIGN.md §6), moved by `transition`: start, end, complete, cancel, and the
 * moves that keep the state (reschedule, price adjustments) so they too are logged and published.
 */
export const appointmentMachine = defineStateMachine({
  table: appointments,
  key: appointments.id,
  state: appointments.status,
  states: APPOINTMENT_STATUSES,
  label: 'Appointment',
  noun: 'appointment',
  stateName: 'status',
  subjectType: 'appointment',
  audit: (a) => ({
    status: a.status,
    starts_at: a.startsAt.toISOString(),
    ends_at: a.endsAt.toISOString(),
    price_cents: a.priceCents,
    price_adjustment_status: a.priceAdjustmentStatus,
    price_adjustment_amount_cents: a.priceAdjustmentAmountCents,
  }),
  stamp: () => ({ updatedAt: sql`now()` }),
});

const clientUser = aliasedTable(users, 'client_user');
const prestataireUser = aliasedTable(users, 'prestataire_user');

/** An appointment with what its parties see of each other, the vehicle, the service and the prestataire's time zone. */
const view = {
  appointment: appointments,
  client: { id: clientUser.id, firstName: clientUser.firstName, lastName: clientUser.lastName },
  prestataire: {
    id: prestataireUser.id,
    firstName: prestataireUser.firstName,
    lastName: prestataireUser.lastName,
    businessName: prestataireProfiles.businessName,
    timezone: prestataireProfiles.timezone,
  },
  vehicle: { id: vehicles.id, make: vehicles.make, model: vehicles.model, year: vehicles.year, plate: vehicles.plate },
  service: { id: services.id, name: services.name },
};

function selectView(db: DbTx) {
  return db
    .select(view)
    .from(appointments)
    .innerJoin(clientUser, eq(clientUser.id, appointments.clientId))
    .innerJoin(prestataireUser, eq(prestataireUser.id, appointments.prestataireId))
    .leftJoin(prestataireProfiles, eq(prestataireProfiles.userId, appointments.prestataireId))
    .innerJoin(vehicles, eq(vehicles.id, appointments.vehicleId))
    .innerJoin(services, eq(services.id, appointments.serviceId));
}

export type AppointmentView = NonNullable<Awaited<ReturnType<typeof findAppointment>>>;

export async function findAppointment(db: DbTx, id: number) {
  const [row] = await selectView(db).where(eq(appointments.id, id)).limit(1);
  return row;
}

/** The appointment row, locked for the caller's transaction (the moves read it, then decide). */
export async function lockAppointment(tx: DbTx, id: number): Promise<(Appointment & { timezone: string | null }) | undefined> {
  // The zone comes through a subquery, so that the lock names no table: `FOR UPDATE OF` takes
  // unqualified names only, and the app's tables are named with their schema.
  const [row] = await tx
    .select({
      appointment: appointments,
      timezone: sql<string | null>`(select ${prestataireProfiles.timezone} from ${prestataireProfiles}
                                     where ${prestataireProfiles.userId} = ${appointments.prestataireId})`,
    })
    .from(appointments)
    .where(eq(appointments.id, id))
    .for('update');
  return row && { ...row.appointment, timezone: row.timezone };
}

export interface AppointmentFilter {
  /** Whose appointments: the client's or the prestataire's. */
  party: { role: 'client' | 'prestataire'; userId: number };
  status?: AppointmentStatus;
  from?: Date;
  to?: Date;
}

/**
 * A page of appointments with their parties, vehicle and service: the page's ids are chosen first
 * (the party's index, then the order), and only those rows are joined — not every appointment of
 * the party before the limit.
 */
function pageOf(db: DbTx, where: SQL | undefined, limit: number | Placeholder, offset: number | Placeholder) {
  const ids = db
    .select({ id: appointments.id })
    .from(appointments)
    .where(where)
    .orderBy(desc(appointments.startsAt), desc(appointments.id))
    .limit(limit)
    .offset(offset);
  return selectView(db).where(inArray(appointments.id, ids)).orderBy(desc(appointments.startsAt), desc(appointments.id));
}

// A party's first pages without filters are the common path of both apps: prepared once per database.
const partyColumn = { client: appointments.clientId, prestataire: appointments.prestataireId } as const;
const unfilteredPage = {
  client: preparedPage('client'),
  prestataire: preparedPage('prestataire'),
};
function preparedPage(role: 'client' | 'prestataire') {
  const own = eq(partyColumn[role], sql.placeholder('userId'));
  return {
    // preparedOnce hands over the handle untyped; it is the app's database.
    rows: preparedOnce((db) =>
      pageOf(db as DbTx, own, sql.placeholder('limit'), sql.placeholder('offset')).prepare(`appointments_page_${role}`),
    ),
    count: preparedOnce((db) => db.select({ n: count() }).from(appointments).where(own).prepare(`appointments_count_${role}`)),
  };
}

/** One page of a party's appointments, the latest start first. */
export async function listAppointments(db: DbTx, filter: AppointmentFilter, limit: number, offset: number) {
  const { role, userId } = filter.party;
  if (!filter.status && !filter.from && !filter.to) {
    const prepared = unfilteredPage[role];
    const [rows, [total]] = await Promise.all([prepared.rows(db).execute({ userId, limit, offset }), prepared.count(db).execute({ userId })]);
    return { rows, total: total?.n ?? 0 };
  }
  const conditions: (SQL | undefined)[] = [
    eq(partyColumn[role], userId),
    filter.status ? eq(appointments.status, filter.status) : undefined,
    filter.from ? gte(appointments.startsAt, filter.from) : undefined,
    filter.to ? lt(appointments.startsAt, filter.to) : undefined,
  ];
  const where = and(...conditions);
  const [rows, [total]] = await Promise.all([
    pageOf(db, where, limit, offset),
    db.select({ n: count() }).from(appointments).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}
