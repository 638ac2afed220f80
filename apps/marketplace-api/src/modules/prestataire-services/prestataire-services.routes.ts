import type { FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses } from '@repo/schemas';
import { actorOf } from '../../lib/context.js';
import {
  EnableServiceParams,
  OwnServiceEnvelope,
  OwnServicesEnvelope,
  presentOwnService,
  SyncServicesBody,
} from './prestataire-services.schemas.js';
import type { PrestataireServicesService } from './prestataire-services.service.js';

export function prestataireServicesRoutes(deps: { prestataireServices: PrestataireServicesService }): FastifyPluginAsyncZod {
  return async (app) => {
    const prestataireOnly = app.auth.requireRole('prestataire');
    const security = [{ bearerAuth: [] }];

    app.get(
      '/prestataire/services',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'listPrestataireServices',
          tags: ['prestataire'],
          summary: 'The services you offer, with your prices and durations',
          security,
          response: { 200: OwnServicesEnvelope, ...errorResponses(401, 403, 404, 429) },
        },
      },
      async (request) => ({ data: (await deps.prestataireServices.list(actorOf(request))).map(presentOwnService) }),
    );

    app.put(
      '/prestataire/services',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'syncPrestataireServices',
          tags: ['prestataire'],
          summary: 'Set the whole list of services you offer (those left out are removed)',
          description:
            "Each item: an active catalogue service, your price in cents (≥ 0) and duration (15–1440 minutes); a price or duration left out takes the catalogue's. A service listed twice, unknown or inactive → 422 on `services.N.service_id`.",
          security,
          body: SyncServicesBody,
          response: { 200: OwnServicesEnvelope, ...errorResponses(400, 401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        const list = await deps.prestataireServices.sync(actorOf(request), request.body);
        return { data: list.map(presentOwnService), message: 'Services updated' };
      },
    );

    app.post(
      '/prestataire/enable-service/:service',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'enablePrestataireService',
          tags: ['prestataire'],
          summary: "Offer one more service, at the catalogue's price and duration",
          description: 'Answers 201 when added; a service you already offer answers 200 with it unchanged. Unknown or inactive service → 404.',
          security,
          params: EnableServiceParams,
          response: { 200: OwnServiceEnvelope, 201: OwnServiceEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request, reply) => {
        const { service, created } = await deps.prestataireServices.enable(actorOf(request), request.params.service);
        return reply
          .status(created ? 201 : 200)
          .send({ data: presentOwnService(service), message: created ? 'Service enabled' : 'Service already offered' });
      },
    );
  };
}
