import type { FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses, paginatedEnvelope } from '@repo/schemas';
import { actorOf } from '../../../lib/context.js';
import type { AppointmentsService } from './appointments.service.js';
import {
  AppointmentParams,
  AppointmentResponse,
  CancelBody,
  ListAppointmentsQuery,
  presentAppointment,
  PriceAdjustmentBody,
  RescheduleBody,
} from './appointments.schemas.js';

export function appointmentsRoutes(deps: { appointments: AppointmentsService }): FastifyPluginAsyncZod {
  return async (app) => {
    const signedIn = app.auth.authenticate;
    const adminOnly = app.auth.requireRole('admin');
    const security = [{ bearerAuth: [] }];
    const service = deps.appointments;
    const tags = ['appointments'];
    const moved = envelope(AppointmentResponse);

    app.get(
      '/appointments',
      {
        onRequest: signedIn,
        schema: {
          operationId: 'listAppointments',
          tags,
          summary: "The caller's appointments (as client or as prestataire), the latest start first",
          security,
          querystring: ListAppointmentsQuery,
          response: { 200: paginatedEnvelope(AppointmentResponse), ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await service.list(actorOf(request), request.query);
        return { data: rows.map(presentAppointment), meta };
      },
    );

    app.get(
      '/appointments/:appointment',
      {
        onRequest: signedIn,
        schema: {
          operationId: 'getAppointment',
          tags,
          summary: 'An appointment, for its client, its prestataire or an administrator',
          security,
          params: AppointmentParams,
          response: { 200: moved, ...errorResponses(401, 404, 422, 429) },
        },
      },
      async (request) => ({ data: presentAppointment(await service.show(actorOf(request), request.params.appointment)) }),
    );

    app.put(
      '/appointments/:appointment/reschedule',
      {
        onRequest: signedIn,
        schema: {
          operationId: 'rescheduleAppointment',
          tags,
          summary: 'Move a scheduled appointment to another free start, keeping its duration (either party)',
          security,
          params: AppointmentParams,
          body: RescheduleBody,
          response: { 200: moved, ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => ({
        data: presentAppointment(await service.reschedule(actorOf(request), request.params.appointment, request.body.starts_at)),
        message: 'Appointment rescheduled',
      }),
    );

    app.post(
      '/appointments/:appointment/cancel',
      {
        onRequest: signedIn,
        schema: {
          operationId: 'cancelAppointment',
          tags,
          summary: "Cancel a scheduled appointment with a reason (either party; a client's late cancellation carries the fee)",
          security,
          params: AppointmentParams,
          body: CancelBody,
          response: { 200: moved, ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => ({
        data: presentAppointment(await service.cancel(actorOf(request), request.params.appointment, request.body.reason)),
        message: 'Appointment cancelled',
      }),
    );

    const simpleMoves = [
      ['start', 'startAppointment', 'Start the work, on the appointment\'s day in the prestataire\'s time zone (its prestataire)', 'Appointment started'],
      ['end', 'endAppointment', 'End the work; the price is final and a pending price adjustment is rejected (its prestataire)', 'Appointment ended'],
      ['complete', 'completeAppointment', 'Confirm an ended, paid appointment; its service request completes (its client)', 'Appointment completed'],
      [
        'accept-price-adjustment',
        'acceptAppointmentPriceAdjustment',
        'Accept the pending price adjustment: its amount becomes the price (its client)',
        'Price adjustment accepted',
      ],
      ['reject-price-adjustment', 'rejectAppointmentPriceAdjustment', 'Reject the pending price adjustment (its client)', 'Price adjustment rejected'],
    ] as const;
    const handlers = {
      start: service.start,
      end: service.end,
      complete: service.complete,
      'accept-price-adjustment': service.acceptPriceAdjustment,
      'reject-price-adjustment': service.rejectPriceAdjustment,
    };
    for (const [path, operationId, summary, message] of simpleMoves) {
      app.post(
        `/appointments/:appointment/${path}`,
        {
          onRequest: signedIn,
          schema: {
            operationId,
            tags,
            summary,
            security,
            params: AppointmentParams,
            response: { 200: moved, ...errorResponses(401, 403, 404, 409, 422, 429) },
          },
        },
        async (request) => ({ data: presentAppointment(await handlers[path](actorOf(request), request.params.appointment)), message }),
      );
    }

    app.post(
      '/appointments/:appointment/request-price-adjustment',
      {
        onRequest: signedIn,
        schema: {
          operationId: 'requestAppointmentPriceAdjustment',
          tags,
          summary: 'Propose a new price for a scheduled or running appointment; the client accepts or rejects it (its prestataire)',
          security,
          params: AppointmentParams,
          body: PriceAdjustmentBody,
          response: { 200: moved, ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => ({
        data: presentAppointment(await service.requestPriceAdjustment(actorOf(request), request.params.appointment, request.body)),
        message: 'Price adjustment requested',
      }),
    );

    app.post(
      '/admin/appointments/:appointment/cancel',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminCancelAppointment',
          tags: ['admin'],
          summary: 'Cancel a scheduled appointment with a reason (administrators; no fee)',
          security,
          params: AppointmentParams,
          body: CancelBody,
          response: { 200: moved, ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => ({
        data: presentAppointment(await service.adminCancel(actorOf(request), request.params.appointment, request.body.reason)),
        message: 'Appointment cancelled',
      }),
    );
  };
}
