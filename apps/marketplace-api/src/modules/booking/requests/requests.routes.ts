import { AppError, type FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses, messageEnvelope, paginatedEnvelope } from '@repo/schemas';
import { z } from 'zod';
import { actorOf } from '../../../lib/context.js';
import { IMAGE_TYPES, readMultipart } from '../../../lib/uploads.js';
import { presentOffer } from '../offers/offers.schemas.js';
import { MAX_PHOTOS_PER_REQUEST, type ServiceRequestsService } from './requests.service.js';
import {
  AcceptRequestBody,
  AcceptRequestResponse,
  AdminCancelBody,
  CancelBody,
  ClientRequestDetail,
  ClientRequestItem,
  CreateServiceRequestBody,
  PatchServiceRequestBody,
  PhotoResponse,
  PrestataireRequestItem,
  PrestataireRequestListQuery,
  presentAppointment,
  presentPhoto,
  presentRequest,
  RefuseBody,
  RequestListQuery,
  ServiceRequestCamelParams,
  ServiceRequestDetail,
  ServiceRequestParams,
  ServiceRequestResponse,
} from './requests.schemas.js';

const TAG = 'service-requests';
const Envelope = envelope(ServiceRequestResponse);

export function serviceRequestsRoutes(deps: { serviceRequests: ServiceRequestsService }): FastifyPluginAsyncZod {
  return async (app) => {
    const service = deps.serviceRequests;
    const clientOnly = app.auth.requireRole('client');
    const prestataireOnly = app.auth.requireRole('prestataire');
    const adminOnly = app.auth.requireRole('admin');
    const security = [{ bearerAuth: [] }];

    app.post(
      '/service-requests',
      {
        onRequest: clientOnly,
        schema: {
          operationId: 'createServiceRequest',
          tags: [TAG],
          summary: 'Ask for a service on one of your vehicles: open to nearby prestataires, or aimed at one (`prestataire_id`)',
          security,
          body: CreateServiceRequestBody,
          response: { 201: Envelope, ...errorResponses(400, 401, 403, 422, 429) },
        },
      },
      async (request, reply) => {
        const created = await service.create(actorOf(request), request.body);
        return reply.status(201).send({ data: presentRequest(created), message: 'Service request created' });
      },
    );

    app.get(
      '/service-requests',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'listServiceRequests',
          tags: [TAG],
          summary: 'Service requests: a client its own, a prestataire those it can see, an admin all; newest first',
          security,
          querystring: RequestListQuery,
          response: { 200: paginatedEnvelope(ServiceRequestResponse), ...errorResponses(401, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await service.list(actorOf(request), request.query);
        return { data: rows.map((r) => presentRequest(r.request)), meta };
      },
    );

    app.get(
      '/service-requests/:service_request',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'showServiceRequest',
          tags: [TAG],
          summary: 'A service request, for its client, a prestataire that can see it or has offered on it, or an admin',
          security,
          params: ServiceRequestParams,
          response: { 200: envelope(ServiceRequestDetail), ...errorResponses(401, 404, 422, 429) },
        },
      },
      async (request) => {
        const { request: row, photos, appointmentId } = await service.show(actorOf(request), request.params.service_request);
        return { data: { ...presentRequest(row), photos: photos.map(presentPhoto), appointment_id: appointmentId } };
      },
    );

    const editSchema = (operationId: string, summary: string, body: typeof CreateServiceRequestBody | typeof PatchServiceRequestBody) => ({
      operationId,
      tags: [TAG],
      summary,
      security,
      params: ServiceRequestParams,
      body,
      response: { 200: Envelope, ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
    });

    app.put(
      '/service-requests/:service_request',
      {
        onRequest: clientOnly,
        schema: editSchema('replaceServiceRequest', 'Rewrite your request (the whole creation body), while it is open with no offer', CreateServiceRequestBody),
      },
      async (request) => {
        const row = await service.update(actorOf(request), request.params.service_request, request.body);
        return { data: presentRequest(row), message: 'Service request updated' };
      },
    );

    app.patch(
      '/service-requests/:service_request',
      {
        onRequest: clientOnly,
        schema: editSchema('updateServiceRequest', 'Change some fields of your request, while it is open with no offer', PatchServiceRequestBody),
      },
      async (request) => {
        const row = await service.update(actorOf(request), request.params.service_request, request.body);
        return { data: presentRequest(row), message: 'Service request updated' };
      },
    );

    app.delete(
      '/service-requests/:service_request',
      {
        onRequest: clientOnly,
        schema: {
          operationId: 'deleteServiceRequest',
          tags: [TAG],
          summary: 'Delete your request and its photos, while it is open with no offer (later, cancel it instead)',
          security,
          params: ServiceRequestParams,
          response: { 200: messageEnvelope, ...errorResponses(401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => {
        await service.remove(actorOf(request), request.params.service_request);
        return { message: 'Service request deleted' };
      },
    );

    app.post(
      '/service-requests/:serviceRequest/photos',
      {
        onRequest: clientOnly,
        schema: {
          operationId: 'uploadServiceRequestPhotos',
          tags: [TAG],
          summary: `Attach photos to your open request (multipart, one or more \`photos\` parts: JPEG, PNG or WebP; at most ${MAX_PHOTOS_PER_REQUEST} per request)`,
          consumes: ['multipart/form-data'],
          security,
          params: ServiceRequestCamelParams,
          response: { 201: envelope(z.array(PhotoResponse)), ...errorResponses(400, 401, 403, 404, 409, 413, 422, 429) },
        },
      },
      async (request, reply) => {
        const { files } = await readMultipart(request, {
          accept: IMAGE_TYPES,
          maxFiles: MAX_PHOTOS_PER_REQUEST,
          acceptLabel: 'a JPEG, PNG or WebP image',
        });
        if (files.length === 0) throw AppError.validation({ photos: ['Send at least one image'] });
        const added = await service.addPhotos(actorOf(request), request.params.serviceRequest, files);
        return reply.status(201).send({ data: added.map(presentPhoto), message: 'Photos added' });
      },
    );

    // The client's views

    app.get(
      '/client/requests',
      {
        onRequest: clientOnly,
        schema: {
          operationId: 'listClientRequests',
          tags: ['client'],
          summary: 'Your requests with their offer counts and appointment, newest first',
          security,
          querystring: RequestListQuery,
          response: { 200: paginatedEnvelope(ClientRequestItem), ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await service.clientList(actorOf(request), request.query);
        return {
          data: rows.map((r) => ({ ...presentRequest(r.request), offers_count: r.offersCount, appointment_id: r.appointmentId })),
          meta,
        };
      },
    );

    app.get(
      '/client/requests/:serviceRequest',
      {
        onRequest: clientOnly,
        schema: {
          operationId: 'showClientRequest',
          tags: ['client'],
          summary: 'Your request with its offers (each prestataire named and rated), photos and appointment',
          security,
          params: ServiceRequestCamelParams,
          response: { 200: envelope(ClientRequestDetail), ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        const d = await service.clientShow(actorOf(request), request.params.serviceRequest);
        return {
          data: {
            ...presentRequest(d.request),
            offers: d.offers.map(presentOffer),
            photos: d.photos.map(presentPhoto),
            appointment: d.appointment ? presentAppointment(d.appointment) : null,
          },
        };
      },
    );

    app.post(
      '/client/requests/:serviceRequest/cancel',
      {
        onRequest: clientOnly,
        schema: {
          operationId: 'cancelClientRequest',
          tags: ['client'],
          summary: 'Cancel your open or quoted request; its pending offers are refused',
          security,
          params: ServiceRequestCamelParams,
          body: CancelBody.nullish(),
          response: { 200: Envelope, ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => {
        const row = await service.clientCancel(actorOf(request), request.params.serviceRequest, request.body?.reason ?? null);
        return { data: presentRequest(row), message: 'Service request cancelled' };
      },
    );

    // The prestataire's views

    app.get(
      '/prestataire/requests',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'listPrestataireRequests',
          tags: ['prestataire'],
          summary: 'Requests aimed at you, and open requests within your radius for services you offer, newest first',
          security,
          querystring: PrestataireRequestListQuery,
          response: { 200: paginatedEnvelope(PrestataireRequestItem), ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await service.prestataireList(actorOf(request), request.query);
        return {
          data: rows.map((r) => ({ ...presentRequest(r.request), distance_km: r.distanceKm, has_offered: r.hasOffered })),
          meta,
        };
      },
    );

    app.get(
      '/prestataire/requests/:serviceRequest',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'showPrestataireRequest',
          tags: ['prestataire'],
          summary: 'A request you can see, with its distance, its photos and whether you offered on it',
          security,
          params: ServiceRequestCamelParams,
          response: {
            200: envelope(PrestataireRequestItem.extend({ photos: z.array(PhotoResponse) })),
            ...errorResponses(401, 403, 404, 422, 429),
          },
        },
      },
      async (request) => {
        const d = await service.prestataireShow(actorOf(request), request.params.serviceRequest);
        return {
          data: { ...presentRequest(d.request), distance_km: d.distanceKm, has_offered: d.hasOffered, photos: d.photos.map(presentPhoto) },
        };
      },
    );

    app.post(
      '/prestataire/requests/:serviceRequest/accept',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'acceptPrestataireRequest',
          tags: ['prestataire'],
          summary: 'Accept a request aimed at you at a free time of yours: the appointment is booked at once',
          description:
            '`amount_cents` and `duration_minutes` default to your own price and duration for the service, else the catalogue\'s. ' +
            'A time too close, past or outside your hours answers 422 on `starts_at`; a time you are already booked, 409.',
          security,
          params: ServiceRequestCamelParams,
          body: AcceptRequestBody,
          response: { 200: envelope(AcceptRequestResponse), ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => {
        const result = await service.prestataireAccept(actorOf(request), request.params.serviceRequest, request.body);
        return {
          data: { service_request: presentRequest(result.request), appointment: presentAppointment(result.appointment) },
          message: 'Service request accepted',
        };
      },
    );

    app.post(
      '/prestataire/requests/:serviceRequest/refuse',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'refusePrestataireRequest',
          tags: ['prestataire'],
          summary: 'Decline a request aimed at you',
          security,
          params: ServiceRequestCamelParams,
          body: RefuseBody.nullish(),
          response: { 200: Envelope, ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => {
        const row = await service.prestataireRefuse(actorOf(request), request.params.serviceRequest, request.body?.reason ?? null);
        return { data: presentRequest(row), message: 'Service request refused' };
      },
    );

    // Administration

    app.post(
      '/admin/service-requests/:serviceRequest/cancel',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminCancelServiceRequest',
          tags: ['admin'],
          summary: 'Cancel an open or quoted request, with a reason; its pending offers are refused',
          security,
          params: ServiceRequestCamelParams,
          body: AdminCancelBody,
          response: { 200: Envelope, ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => {
        const row = await service.adminCancel(actorOf(request), request.params.serviceRequest, request.body.reason);
        return { data: presentRequest(row), message: 'Service request cancelled' };
      },
    );
  };
}
