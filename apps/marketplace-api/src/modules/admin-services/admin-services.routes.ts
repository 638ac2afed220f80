import type { FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses } from '@repo/schemas';
import { z } from 'zod';
import { actorOf } from '../../lib/context.js';
import type { AdminServicesService } from './admin-services.service.js';
import {
  AdminCategoryResponse,
  AdminServiceEnvelope,
  AdminServiceListEnvelope,
  AdminServiceParams,
  AdminServiceResponse,
  AdminServicesQuery,
  DeleteServiceEnvelope,
  presentAdminCategory,
  presentAdminService,
  ReorderBody,
  ServiceBody,
  ServicePatch,
} from './admin-services.schemas.js';

/** The catalogue as administrators manage it: services of every state, their order, the categories. */
export function adminServicesRoutes(deps: { adminServices: AdminServicesService }): FastifyPluginAsyncZod {
  return async (app) => {
    const adminOnly = app.auth.requireRole('admin');
    const security = [{ bearerAuth: [] }];
    const service = deps.adminServices;

    app.get(
      '/admin/services',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminListServices',
          tags: ['admin'],
          summary: 'Every service, active or not, by category then position; `q` searches names, slugs and descriptions',
          security,
          querystring: AdminServicesQuery,
          response: { 200: AdminServiceListEnvelope, ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await service.list(request.query);
        return { data: rows.map((r) => presentAdminService(r.service, r.category)), meta };
      },
    );

    app.post(
      '/admin/services',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminCreateService',
          tags: ['admin'],
          summary: 'Create a service, last of its category (the slug is made from the name when not given; a taken slug answers 409)',
          security,
          body: ServiceBody,
          response: { 201: AdminServiceEnvelope, ...errorResponses(400, 401, 403, 409, 422, 429) },
        },
      },
      async (request, reply) => {
        const { service: s, category } = await service.create(actorOf(request), request.body);
        return reply.status(201).send({ data: presentAdminService(s, category), message: 'Service created' });
      },
    );

    // Declared before `/admin/services/:service`; the router prefers the static segment anyway.
    app.put(
      '/admin/services/reorder',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminReorderServices',
          tags: ['admin'],
          summary:
            'Set the positions of services within their categories: `{ services: [{ id, position }] }`, all or none (an unknown id answers 422)',
          security,
          body: ReorderBody,
          response: { 200: envelope(z.array(AdminServiceResponse)), ...errorResponses(400, 401, 403, 422, 429) },
        },
      },
      async (request) => {
        const rows = await service.reorder(actorOf(request), request.body);
        return { data: rows.map((r) => presentAdminService(r.service, r.category)), message: 'Services reordered' };
      },
    );

    app.get(
      '/admin/services/:service',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminShowService',
          tags: ['admin'],
          summary: 'A service, active or not, with its category',
          security,
          params: AdminServiceParams,
          response: { 200: AdminServiceEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        const { service: s, category } = await service.get(request.params.service);
        return { data: presentAdminService(s, category) };
      },
    );

    app.put(
      '/admin/services/:service',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminReplaceService',
          tags: ['admin'],
          summary: 'Replace a service: optional fields left out take their defaults (no description, no price, active), except the slug, which is kept',
          security,
          params: AdminServiceParams,
          body: ServiceBody,
          response: { 200: AdminServiceEnvelope, ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => {
        const { service: s, category } = await service.replace(actorOf(request), request.params.service, request.body);
        return { data: presentAdminService(s, category), message: 'Service updated' };
      },
    );

    app.patch(
      '/admin/services/:service',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminPatchService',
          tags: ['admin'],
          summary: 'Change some fields of a service (only those given)',
          security,
          params: AdminServiceParams,
          body: ServicePatch,
          response: { 200: AdminServiceEnvelope, ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => {
        const { service: s, category } = await service.update(actorOf(request), request.params.service, request.body);
        return { data: presentAdminService(s, category), message: 'Service updated' };
      },
    );

    app.delete(
      '/admin/services/:service',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminDeleteService',
          tags: ['admin'],
          summary:
            'Delete an unused service (`data` null); one that prestataires offer or that requests or appointments name is deactivated instead (`data` the service)',
          security,
          params: AdminServiceParams,
          response: { 200: DeleteServiceEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        const { deactivated } = await service.remove(actorOf(request), request.params.service);
        if (deactivated) {
          return {
            data: presentAdminService(deactivated.service, deactivated.category),
            message: 'Service in use by prestataires, requests or appointments: deactivated instead of deleted',
          };
        }
        return { data: null, message: 'Service deleted' };
      },
    );

    app.get(
      '/admin/service-categories',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminListServiceCategories',
          tags: ['admin'],
          summary: 'Every service category in display order, with how many services it holds (in all and active)',
          security,
          response: { 200: envelope(z.array(AdminCategoryResponse)), ...errorResponses(401, 403, 429) },
        },
      },
      async () => {
        const rows = await service.listCategories();
        return { data: rows.map((r) => presentAdminCategory(r.category, r.servicesCount, r.activeServicesCount)) };
      },
    );
  };
}
