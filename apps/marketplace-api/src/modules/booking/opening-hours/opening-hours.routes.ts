import type { FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses, messageEnvelope } from '@repo/schemas';
import { actorOf } from '../../../lib/context.js';
import {
  AbsenceEnvelope,
  AbsenceListEnvelope,
  AbsenceParams,
  AbsencesQuery,
  AvailabilitiesBody,
  AvailabilitiesEnvelope,
  ClosureBody,
  ClosureEnvelope,
  ClosureListEnvelope,
  ClosureParams,
  ClosuresQuery,
  CreateAbsenceBody,
  PatchClosureBody,
  presentAbsence,
  presentAvailability,
  presentClosure,
} from './opening-hours.schemas.js';
import type { ScheduleService } from './opening-hours.service.js';

export function scheduleRoutes(deps: { schedule: ScheduleService }): FastifyPluginAsyncZod {
  return async (app) => {
    const prestataireOnly = app.auth.requireRole('prestataire');
    const security = [{ bearerAuth: [] }];
    const tags = ['prestataire'];

    // ─── Weekly hours ───

    app.get(
      '/prestataire/availabilities',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'listPrestataireAvailabilities',
          tags,
          summary: 'Your weekly opening hours, by day and time',
          security,
          response: { 200: AvailabilitiesEnvelope, ...errorResponses(401, 403, 429) },
        },
      },
      async (request) => ({ data: (await deps.schedule.listAvailabilities(actorOf(request))).map(presentAvailability) }),
    );

    app.put(
      '/prestataire/availabilities',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'replacePrestataireAvailabilities',
          tags,
          summary: 'Set your whole week of opening hours (an empty list: closed every day)',
          description:
            'Intervals of wall-clock time in your time zone: `day_of_week` 1 (Monday) … 7, `start_time` and `end_time` as HH:MM, ' +
            '`end_time` after `start_time` (24:00 ends the day). Intervals of one day must not overlap (touching is fine).',
          security,
          body: AvailabilitiesBody,
          response: { 200: AvailabilitiesEnvelope, ...errorResponses(400, 401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        const rows = await deps.schedule.replaceAvailabilities(actorOf(request), request.body);
        return { data: rows.map(presentAvailability), message: 'Opening hours updated' };
      },
    );

    // ─── Absences ───

    app.get(
      '/prestataire/absences',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'listPrestataireAbsences',
          tags,
          summary: 'Your absences overlapping a window (default: those not over yet)',
          security,
          querystring: AbsencesQuery,
          response: { 200: AbsenceListEnvelope, ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await deps.schedule.listAbsences(actorOf(request), request.query);
        return { data: rows.map(presentAbsence), meta };
      },
    );

    app.post(
      '/prestataire/absences',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'createPrestataireAbsence',
          tags,
          summary: 'Declare an absence: no slot is offered between its two instants',
          description: '`starts_at` and `ends_at`: ISO 8601 instants with their offset; `ends_at` after `starts_at`, at most one year later.',
          security,
          body: CreateAbsenceBody,
          response: { 201: AbsenceEnvelope, ...errorResponses(400, 401, 403, 422, 429) },
        },
      },
      async (request, reply) => {
        const absence = await deps.schedule.createAbsence(actorOf(request), request.body);
        return reply.status(201).send({ data: presentAbsence(absence), message: 'Absence added' });
      },
    );

    app.delete(
      '/prestataire/absences/:absence',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'deletePrestataireAbsence',
          tags,
          summary: 'Delete one of your absences',
          security,
          params: AbsenceParams,
          response: { 200: messageEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        await deps.schedule.deleteAbsence(actorOf(request), request.params.absence);
        return { message: 'Absence deleted' };
      },
    );

    // ─── Closures ───

    app.get(
      '/prestataire/closures',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'listPrestataireClosures',
          tags,
          summary: 'Your closures overlapping a range of days (default: those not over yet)',
          security,
          querystring: ClosuresQuery,
          response: { 200: ClosureListEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await deps.schedule.listClosures(actorOf(request), request.query);
        return { data: rows.map(presentClosure), meta };
      },
    );

    app.post(
      '/prestataire/closures',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'createPrestataireClosure',
          tags,
          summary: 'Close for whole days (local dates, both inclusive)',
          description: '`start_date` and `end_date` as YYYY-MM-DD in your time zone; `end_date` on or after `start_date`, at most 366 days.',
          security,
          body: ClosureBody,
          response: { 201: ClosureEnvelope, ...errorResponses(400, 401, 403, 422, 429) },
        },
      },
      async (request, reply) => {
        const closure = await deps.schedule.createClosure(actorOf(request), request.body);
        return reply.status(201).send({ data: presentClosure(closure), message: 'Closure added' });
      },
    );

    app.get(
      '/prestataire/closures/:closure',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'showPrestataireClosure',
          tags,
          summary: 'One of your closures',
          security,
          params: ClosureParams,
          response: { 200: ClosureEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => ({ data: presentClosure(await deps.schedule.getClosure(actorOf(request), request.params.closure)) }),
    );

    for (const method of ['PUT', 'PATCH'] as const) {
      const whole = method === 'PUT';
      app.route({
        method,
        url: '/prestataire/closures/:closure',
        onRequest: prestataireOnly,
        schema: {
          operationId: whole ? 'updatePrestataireClosure' : 'patchPrestataireClosure',
          tags,
          summary: whole ? 'Replace one of your closures (a reason left out is cleared)' : 'Change some fields of one of your closures',
          security,
          params: ClosureParams,
          body: whole ? ClosureBody : PatchClosureBody,
          response: { 200: ClosureEnvelope, ...errorResponses(400, 401, 403, 404, 422, 429) },
        },
        handler: async (request) => {
          const closure = await deps.schedule.updateClosure(actorOf(request), request.params.closure, request.body, whole);
          return { data: presentClosure(closure), message: 'Closure updated' };
        },
      });
    }

    app.delete(
      '/prestataire/closures/:closure',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'deletePrestataireClosure',
          tags,
          summary: 'Delete one of your closures',
          security,
          params: ClosureParams,
          response: { 200: messageEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        await deps.schedule.deleteClosure(actorOf(request), request.params.closure);
        return { message: 'Closure deleted' };
      },
    );
  };
}
