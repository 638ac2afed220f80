import type { FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses } from '@repo/schemas';
import type { CatalogueService } from './catalogue.service.js';
import {
  CategoryListEnvelope,
  CityListEnvelope,
  ListCitiesQuery,
  ListServicesQuery,
  presentCategory,
  presentCity,
  presentService,
  ServiceEnvelope,
  ServiceListEnvelope,
  ServiceParams,
} from './catalogue.schemas.js';

/** The public catalogue: service categories, services and cities. */
export function catalogueRoutes(deps: { catalogue: CatalogueService }): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/categories',
      {
        schema: {
          operationId: 'listCategories',
          tags: ['catalogue'],
          summary: 'Service categories in display order, with the number of active services in each',
          security: [],
          response: { 200: CategoryListEnvelope, ...errorResponses(429) },
        },
      },
      async () => {
        const rows = await deps.catalogue.listCategories();
        return { data: rows.map((r) => presentCategory(r.category, r.servicesCount)) };
      },
    );

    app.get(
      '/services',
      {
        schema: {
          operationId: 'listServices',
          tags: ['catalogue'],
          summary: 'Active services, by category then position; `q` searches names and descriptions, accents ignored',
          security: [],
          querystring: ListServicesQuery,
          response: { 200: ServiceListEnvelope, ...errorResponses(422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await deps.catalogue.listServices(request.query);
        return { data: rows.map((r) => presentService(r.service, r.category)), meta };
      },
    );

    app.get(
      '/services/:service',
      {
        schema: {
          operationId: 'getService',
          tags: ['catalogue'],
          summary: 'An active service with its category',
          security: [],
          params: ServiceParams,
          response: { 200: ServiceEnvelope, ...errorResponses(404, 422, 429) },
        },
      },
      async (request) => {
        const { service, category } = await deps.catalogue.getService(request.params.service);
        return { data: presentService(service, category) };
      },
    );

    app.get(
      '/cities',
      {
        schema: {
          operationId: 'listCities',
          tags: ['catalogue'],
          summary:
            'French communes by name (accents ignored; names starting with `q` first) and/or postal code (full or leading digits), most populous first',
          security: [],
          querystring: ListCitiesQuery,
          response: { 200: CityListEnvelope, ...errorResponses(422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await deps.catalogue.listCities(request.query);
        return { data: rows.map(presentCity), meta };
      },
    );
  };
}
