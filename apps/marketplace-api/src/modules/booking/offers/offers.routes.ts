import type { FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses } from '@repo/schemas';
import { z } from 'zod';
import { actorOf } from '../../../lib/context.js';
import { AppointmentResponse, presentAppointment } from '../requests/requests.schemas.js';
import type { OffersService } from './offers.service.js';
import { OfferBody, OfferParams, OfferResponse, presentOffer, RequestOffersParams } from './offers.schemas.js';

const TAG = 'offers';

export function offersRoutes(deps: { offers: OffersService }): FastifyPluginAsyncZod {
  return async (app) => {
    const service = deps.offers;
    const clientOnly = app.auth.requireRole('client');
    const prestataireOnly = app.auth.requireRole('prestataire');
    const security = [{ bearerAuth: [] }];

    app.get(
      '/service-requests/:serviceRequest/offers',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'listServiceRequestOffers',
          tags: [TAG],
          summary: "A request's offers: all of them for its client (and admins), your own for a prestataire; oldest first",
          security,
          params: RequestOffersParams,
          response: { 200: envelope(z.array(OfferResponse)), ...errorResponses(401, 404, 422, 429) },
        },
      },
      async (request) => {
        const rows = await service.list(actorOf(request), request.params.serviceRequest);
        return { data: rows.map(presentOffer) };
      },
    );

    app.post(
      '/service-requests/:serviceRequest/offers',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'createOffer',
          tags: [TAG],
          summary: 'Quote for a request you can see: a price, a free start time of yours and a duration',
          description:
            '`valid_until` defaults to the platform offer lifetime and never passes the request\'s expiry. A start that is not ' +
            'a free slot of yours (slots start on your local 30-minute grid, at least 60 minutes ahead, within your hours and free) ' +
            'answers 422 on `proposed_start_at`. A request you cannot see answers 404; one you quoted that is no longer open, ' +
            'or a second pending offer, 409.',
          security,
          params: RequestOffersParams,
          body: OfferBody,
          response: { 201: envelope(OfferResponse), ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request, reply) => {
        const row = await service.create(actorOf(request), request.params.serviceRequest, request.body);
        return reply.status(201).send({ data: presentOffer(row), message: 'Offer sent' });
      },
    );

    app.put(
      '/offers/:offer',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'updateOffer',
          tags: [TAG],
          summary: 'Change your pending offer (its slot is checked again)',
          security,
          params: OfferParams,
          body: OfferBody,
          response: { 200: envelope(OfferResponse), ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => {
        const row = await service.update(actorOf(request), request.params.offer, request.body);
        return { data: presentOffer(row), message: 'Offer updated' };
      },
    );

    app.post(
      '/offers/:offer/accept',
      {
        onRequest: clientOnly,
        schema: {
          operationId: 'acceptOffer',
          tags: [TAG],
          summary: 'Accept an offer on your request: the others are refused and the appointment is booked, all at once',
          description: 'An offer past its `valid_until`, or whose time the prestataire no longer has free, answers 409.',
          security,
          params: OfferParams,
          response: {
            200: envelope(z.object({ offer: OfferResponse, appointment: AppointmentResponse })),
            ...errorResponses(401, 403, 404, 409, 422, 429),
          },
        },
      },
      async (request) => {
        const { offer, appointment } = await service.accept(actorOf(request), request.params.offer);
        return { data: { offer: presentOffer(offer), appointment: presentAppointment(appointment) }, message: 'Offer accepted' };
      },
    );

    app.post(
      '/offers/:offer/refuse',
      {
        onRequest: clientOnly,
        schema: {
          operationId: 'refuseOffer',
          tags: [TAG],
          summary: 'Refuse an offer on your request',
          security,
          params: OfferParams,
          response: { 200: envelope(OfferResponse), ...errorResponses(401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => {
        const row = await service.refuse(actorOf(request), request.params.offer);
        return { data: presentOffer(row), message: 'Offer refused' };
      },
    );
  };
}
