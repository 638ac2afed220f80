import { AppError, pageMeta, pageOffset } from '@repo/http';
import type { DbTx } from '../../../db/index.js';
import { addDays, isCalendarDate, startOfDayIn, type Clock } from '../../../lib/time.js';
import * as repo from './admin-views.repository.js';
import type { AdminAppointmentsQuery, AdminRequestsQuery } from './admin-views.schemas.js';

/**
 * A `from`/`to` pair as a half-open range of instants. Days are the platform's (an administrator
 * in Paris asking for the 25th means the 25th in Paris); `to` includes its whole day, or its instant.
 */
function range(zone: string, from: string | undefined, to: string | undefined) {
  const start = from === undefined ? undefined : isCalendarDate(from) ? startOfDayIn(zone, from) : new Date(from);
  const end =
    to === undefined ? undefined : isCalendarDate(to) ? startOfDayIn(zone, addDays(to, 1)) : new Date(new Date(to).getTime() + 1);
  if (start && end && end <= start) throw AppError.validation({ to: ['Must not be before `from`'] });
  return { from: start, to: end };
}

/** What administrators read of the lifecycle: requests with their offers, and appointments. Read-only. */
export function createAdminLifecycleService(deps: { db: DbTx; clock: Pick<Clock, 'zone'> }) {
  const { db, clock } = deps;
  return {
    async listRequests(query: AdminRequestsQuery) {
      const { rows, total } = await repo.listRequests(
        db,
        {
          status: query.status,
          clientId: query.client_id,
          prestataireId: query.prestataire_id,
          serviceId: query.service_id,
          ...range(clock.zone, query.from, query.to),
        },
        query.per_page,
        pageOffset(query.page, query.per_page),
      );
      return { rows, meta: pageMeta(query.page, query.per_page, total) };
    },

    /** A request with its offers, photos and appointment, whoever it belongs to. */
    async showRequest(requestId: number) {
      const request = await repo.findRequest(db, requestId);
      if (!request) throw AppError.notFound('Service request');
      const [offers, photos, appointment] = await Promise.all([
        repo.offersOf(db, requestId),
        repo.photosOf(db, requestId),
        repo.appointmentOfRequest(db, requestId),
      ]);
      return { request, offers, photos, appointment };
    },

    async listAppointments(query: AdminAppointmentsQuery) {
      const { rows, total } = await repo.listAppointments(
        db,
        { status: query.status, clientId: query.client_id, prestataireId: query.prestataire_id, ...range(clock.zone, query.from, query.to) },
        query.per_page,
        pageOffset(query.page, query.per_page),
      );
      return { rows, meta: pageMeta(query.page, query.per_page, total) };
    },

    async showAppointment(appointmentId: number) {
      const appointment = await repo.findAppointment(db, appointmentId);
      if (!appointment) throw AppError.notFound('Appointment');
      return appointment;
    },
  };
}

export type AdminLifecycleService = ReturnType<typeof createAdminLifecycleService>;
