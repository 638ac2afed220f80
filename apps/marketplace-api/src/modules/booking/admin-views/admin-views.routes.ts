import type { FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses } from '@repo/schemas';
import type { AdminLifecycleService } from './admin-views.service.js';
import {
  AdminAppointmentEnvelope,
  AdminAppointmentListEnvelope,
  AdminAppointmentsQuery,
  AdminRequestDetailEnvelope,
  AdminRequestListEnvelope,
  AdminRequestsQuery,
  AppointmentParams,
  presentAdminAppointment,
  presentAdminOffer,
  presentAdminRequest,
  presentPhoto,
  ServiceRequestParams,
} from './admin-views.schemas.js';

/** Service requests and appointments as administrators read them (their cancel routes live with the lifecycle). */
export function adminLifecycleRoutes(deps: { adminLifecycle: AdminLifecycleService }): FastifyPluginAsyncZod {
  return async (app) => {
    const adminOnly = app.auth.requireRole('admin');
    const security = [{ bearerAuth: [] }];
    const service = deps.adminLifecycle;

    app.get(
      '/admin/service-requests',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminListServiceRequests',
          tags: ['admin'],
          summary:
            'Service requests, newest first; `prestataire_id` finds those aimed at a prestataire or that it made an offer on; `from`/`to` bound the creation time',
          security,
          querystring: AdminRequestsQuery,
          response: { 200: AdminRequestListEnvelope, ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await service.listRequests(request.query);
        return { data: rows.map(presentAdminRequest), meta };
      },
    );

    app.get(
      '/admin/service-requests/:serviceRequest',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminShowServiceRequest',
          tags: ['admin'],
          summary: 'A service request with its client, vehicle, offers, photos and appointment',
          security,
          params: ServiceRequestParams,
          response: { 200: AdminRequestDetailEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        const d = await service.showRequest(request.params.serviceRequest);
        return {
          data: {
            ...presentAdminRequest(d.request),
            offers: d.offers.map(presentAdminOffer),
            photos: d.photos.map(presentPhoto),
            appointment: d.appointment ? presentAdminAppointment(d.appointment) : null,
          },
        };
      },
    );

    app.get(
      '/admin/appointments',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminListAppointments',
          tags: ['admin'],
          summary: 'Appointments, latest start first; `from`/`to` bound the start time',
          security,
          querystring: AdminAppointmentsQuery,
          response: { 200: AdminAppointmentListEnvelope, ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await service.listAppointments(request.query);
        return { data: rows.map(presentAdminAppointment), meta };
      },
    );

    app.get(
      '/admin/appointments/:appointment',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminShowAppointment',
          tags: ['admin'],
          summary: 'An appointment with its client, prestataire, vehicle, service, price adjustment and cancellation',
          security,
          params: AppointmentParams,
          response: { 200: AdminAppointmentEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => ({ data: presentAdminAppointment(await service.showAppointment(request.params.appointment)) }),
    );
  };
}
