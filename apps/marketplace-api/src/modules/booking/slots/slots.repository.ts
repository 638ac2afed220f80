import { and, asc, eq, gt, gte, inArray, lt, lte, sql, type SQL } from 'drizzle-orm';
import { preparedOnce } from '@repo/db';
import type { DbTx } from '../../../db/index.js';
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
} from '../../../db/schema/index.js';
import { visiblePrestataire } from '../../prestataires/index.js';

/** The time zone of a prestataire the public may see, or undefined. */
export async function visibleTimezone(db: DbTx, prestataireId: number): Promise<string | undefined> {
  const [row] = await db
    .select({ timezone: prestataireProfiles.timezone })
    .from(prestataireProfiles)
    .innerJoin(users, eq(users.id, prestataireProfiles.userId))
    .where(and(eq(prestataireProfiles.userId, prestataireId), visiblePrestataire()));
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

/** What the slots of a window are computed from, read in one statement. */
export interface ScheduleRead {
  timezone: string;
  /** Whether the public may see this prestataire (validated profile of an active account). */
  visible: boolean;
  weekly: { dayOfWeek: number; startTime: string; endTime: string }[];
  closures: { startDate: string; endDate: string }[];
  absences: { startsAt: Date; endsAt: Date }[];
  busy: { startsAt: Date; endsAt: Date }[];
  /** The service's duration here (own, else the catalogue's) when asked; null for an unknown or inactive service. */
  serviceMinutes: number | null;
}

export interface ScheduleWindow {
  /** Local dates, inclusive: the closures touching them. */
  fromDate: string;
  toDate: string;
  /** Instants: the absences and active appointments overlapping `[first, last)`. */
  first: Date;
  last: Date;
  ignoreAppointmentId?: number;
  serviceId?: number;
}

const epochMs = (column: SQL) => sql`(extract(epoch from ${column}) * 1000)::float8`;

const ph = (name: string) => sql.placeholder(name);

/**
 * A prestataire's time zone, visibility, weekly hours, closures, absences and active appointments
 * of a window (and a service's duration), in one round trip: the window is chosen by the caller
 * wide enough for any time zone, since the zone is only known from this read. On the path of every
 * slots page and booking: built and prepared once per database, every value a placeholder.
 */
const scheduleQuery = preparedOnce((db) =>
  (db as DbTx)
    .select({
      timezone: prestataireProfiles.timezone,
      visible: sql<boolean>`(${visiblePrestataire()})`,
      weekly: sql<ScheduleRead['weekly']>`(select coalesce(json_agg(json_build_object('dayOfWeek', ${availabilities.dayOfWeek},
          'startTime', ${availabilities.startTime}, 'endTime', ${availabilities.endTime})
          order by ${availabilities.dayOfWeek}, ${availabilities.startTime}), '[]'::json)
          from ${availabilities} where ${availabilities.prestataireId} = ${prestataireProfiles.userId})`,
      closures: sql<ScheduleRead['closures']>`(select coalesce(json_agg(json_build_object('startDate', ${closures.startDate},
          'endDate', ${closures.endDate}) order by ${closures.startDate}), '[]'::json)
          from ${closures} where ${closures.prestataireId} = ${prestataireProfiles.userId}
           and ${closures.endDate} >= ${ph('fromDate')}::date and ${closures.startDate} <= ${ph('toDate')}::date)`,
      absences: sql<[number, number][]>`(select coalesce(json_agg(json_build_array(${epochMs(sql`${absences.startsAt}`)}, ${epochMs(sql`${absences.endsAt}`)})
          order by ${absences.startsAt}), '[]'::json)
          from ${absences} where ${absences.prestataireId} = ${prestataireProfiles.userId}
           and ${absences.endsAt} > ${ph('first')}::timestamptz and ${absences.startsAt} < ${ph('last')}::timestamptz)`,
      busy: sql<[number, number][]>`(select coalesce(json_agg(json_build_array(${epochMs(sql`${appointments.startsAt}`)}, ${epochMs(sql`${appointments.endsAt}`)})
          order by ${appointments.startsAt}), '[]'::json)
          from ${appointments} where ${appointments.prestataireId} = ${prestataireProfiles.userId}
           and ${inArray(appointments.status, [...ACTIVE_APPOINTMENT_STATUSES])}
           and ${appointments.endsAt} > ${ph('first')}::timestamptz and ${appointments.startsAt} < ${ph('last')}::timestamptz
           and (${ph('ignoreAppointmentId')}::int is null or ${appointments.id} <> ${ph('ignoreAppointmentId')}::int))`,
      serviceMinutes: sql<number | null>`(select coalesce(${prestataireServices.durationMinutes}, ${services.durationMinutes}) from ${services}
          left join ${prestataireServices} on ${prestataireServices.serviceId} = ${services.id} and ${prestataireServices.prestataireId} = ${prestataireProfiles.userId}
          where ${services.id} = ${ph('serviceId')}::int and ${services.active})`,
    })
    .from(prestataireProfiles)
    .innerJoin(users, eq(users.id, prestataireProfiles.userId))
    .where(eq(prestataireProfiles.userId, ph('prestataireId')))
    .prepare('availability_schedule'),
);

export async function scheduleOf(db: DbTx, prestataireId: number, w: ScheduleWindow): Promise<ScheduleRead | undefined> {
  const [row] = await scheduleQuery(db).execute({
    prestataireId,
    fromDate: w.fromDate,
    toDate: w.toDate,
    first: w.first.toISOString(),
    last: w.last.toISOString(),
    ignoreAppointmentId: w.ignoreAppointmentId ?? null,
    serviceId: w.serviceId ?? null,
  });
  if (!row) return undefined;
  const instants = (pairs: [number, number][]) => pairs.map(([s, e]) => ({ startsAt: new Date(s), endsAt: new Date(e) }));
  return { ...row, absences: instants(row.absences), busy: instants(row.busy) };
}
