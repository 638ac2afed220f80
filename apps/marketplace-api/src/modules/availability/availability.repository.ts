import { and, asc, eq, gt, gte, inArray, lt, lte, ne, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import {
  absences,
  ACTIVE_APPOINTMENT_STATUSES,
  appointments,
  availabilities,
  closures,
  prestataireProfiles,
  prestataireServices,
  services,
  users,
} from '../../db/schema/index.js';
import { visiblePrestataire } from '../prestataires/prestataires.repository.js';

/** The time zone of a prestataire the public may see, or undefined. */
export async function visibleTimezone(db: DbTx, prestataireId: number): Promise<string | undefined> {
  const [row] = await db
    .select({ timezone: prestataireProfiles.timezone })
    .from(prestataireProfiles)
    .innerJoin(users, eq(users.id, prestataireProfiles.userId))
    .where(and(eq(prestataireProfiles.userId, prestataireId), visiblePrestataire()));
  return row?.timezone;
}

/** The time zone of any prestataire profile (the one an offer or an appointment is judged in). */
export async function timezoneOf(db: DbTx, prestataireId: number): Promise<string | undefined> {
  const [row] = await db
    .select({ timezone: prestataireProfiles.timezone })
    .from(prestataireProfiles)
    .where(eq(prestataireProfiles.userId, prestataireId));
  return row?.timezone;
}

export async function weeklyHoursOf(db: DbTx, prestataireId: number) {
  return db
    .select({ dayOfWeek: availabilities.dayOfWeek, startTime: availabilities.startTime, endTime: availabilities.endTime })
    .from(availabilities)
    .where(eq(availabilities.prestataireId, prestataireId))
    .orderBy(asc(availabilities.dayOfWeek), asc(availabilities.startTime));
}

/** Closures touching the local dates `from` … `to`. */
export async function closuresBetween(db: DbTx, prestataireId: number, from: string, to: string) {
  return db
    .select({ id: closures.id, startDate: closures.startDate, endDate: closures.endDate, reason: closures.reason })
    .from(closures)
    .where(and(eq(closures.prestataireId, prestataireId), gte(closures.endDate, from), lte(closures.startDate, to)))
    .orderBy(asc(closures.startDate));
}

/** Absences overlapping `[from, to)`. */
export async function absencesBetween(db: DbTx, prestataireId: number, from: Date, to: Date) {
  return db
    .select({ id: absences.id, startsAt: absences.startsAt, endsAt: absences.endsAt, reason: absences.reason })
    .from(absences)
    .where(and(eq(absences.prestataireId, prestataireId), gt(absences.endsAt, from), lt(absences.startsAt, to)))
    .orderBy(asc(absences.startsAt));
}

/** Active appointments of a prestataire overlapping `[from, to)`, but the one named. */
export async function busyBetween(db: DbTx, prestataireId: number, from: Date, to: Date, ignoreAppointmentId?: number) {
  return db
    .select({ startsAt: appointments.startsAt, endsAt: appointments.endsAt })
    .from(appointments)
    .where(
      and(
        eq(appointments.prestataireId, prestataireId),
        inArray(appointments.status, [...ACTIVE_APPOINTMENT_STATUSES]),
        gt(appointments.endsAt, from),
        lt(appointments.startsAt, to),
        ignoreAppointmentId === undefined ? undefined : ne(appointments.id, ignoreAppointmentId),
      ),
    );
}

/** How long a service takes at this prestataire: its own duration, else the catalogue's; undefined for an unknown or inactive service. */
export async function serviceDuration(db: DbTx, prestataireId: number, serviceId: number): Promise<number | undefined> {
  const [row] = await db
    .select({
      minutes: sql<number>`coalesce(${prestataireServices.durationMinutes}, ${services.durationMinutes})`.mapWith(Number),
    })
    .from(services)
    .leftJoin(
      prestataireServices,
      and(eq(prestataireServices.serviceId, services.id), eq(prestataireServices.prestataireId, prestataireId)),
    )
    .where(and(eq(services.id, serviceId), eq(services.active, true)));
  return row?.minutes;
}
