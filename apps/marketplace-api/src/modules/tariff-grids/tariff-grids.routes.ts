import type { FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses, messageEnvelope, paginatedEnvelope } from '@repo/schemas';
import { actorOf } from '../../lib/context.js';
import type { TariffGridsService } from './tariff-grids.service.js';
import {
  presentTariffGrid,
  TariffGridBody,
  TariffGridParams,
  TariffGridPatch,
  TariffGridQuery,
  TariffGridResponse,
} from './tariff-grids.schemas.js';

export function tariffGridsRoutes(deps: { tariffGrids: TariffGridsService }): FastifyPluginAsyncZod {
  return async (app) => {
    const adminOnly = app.auth.requireRole('admin');
    const security = [{ bearerAuth: [] }];

    app.get(
      '/admin/tariff-grids',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminListTariffGrids',
          tags: ['admin'],
          summary: 'Hourly labour rates by vehicle category and region',
          security,
          querystring: TariffGridQuery,
          response: { 200: paginatedEnvelope(TariffGridResponse), ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const q = request.query;
        const { rows, meta } = await deps.tariffGrids.list(
          { vehicleCategory: q.vehicle_category, regionCode: q.region_code, active: q.active },
          q.page,
          q.per_page,
        );
        return { data: rows.map(presentTariffGrid), meta };
      },
    );

    app.post(
      '/admin/tariff-grids',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminCreateTariffGrid',
          tags: ['admin'],
          summary: 'Create a tariff grid (one active grid per category and region)',
          security,
          body: TariffGridBody,
          response: { 201: envelope(TariffGridResponse), ...errorResponses(400, 401, 403, 409, 422, 429) },
        },
      },
      async (request, reply) => {
        const grid = await deps.tariffGrids.create(actorOf(request), request.body);
        return reply.status(201).send({ data: presentTariffGrid(grid), message: 'Tariff grid created' });
      },
    );

    app.get(
      '/admin/tariff-grids/:tariff_grid',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminShowTariffGrid',
          tags: ['admin'],
          summary: 'One tariff grid',
          security,
          params: TariffGridParams,
          response: { 200: envelope(TariffGridResponse), ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => ({ data: presentTariffGrid(await deps.tariffGrids.get(request.params.tariff_grid)) }),
    );

    for (const method of ['PUT', 'PATCH'] as const) {
      app.route({
        method,
        url: '/admin/tariff-grids/:tariff_grid',
        onRequest: adminOnly,
        schema: {
          operationId: method === 'PUT' ? 'adminUpdateTariffGrid' : 'adminPatchTariffGrid',
          tags: ['admin'],
          summary: 'Change a tariff grid (only the fields given)',
          security,
          params: TariffGridParams,
          body: TariffGridPatch,
          response: { 200: envelope(TariffGridResponse), ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
        handler: async (request) => {
          const grid = await deps.tariffGrids.update(actorOf(request), request.params.tariff_grid, request.body);
          return { data: presentTariffGrid(grid), message: 'Tariff grid updated' };
        },
      });
    }

    app.delete(
      '/admin/tariff-grids/:tariff_grid',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminDeleteTariffGrid',
          tags: ['admin'],
          summary: 'Delete a tariff grid',
          security,
          params: TariffGridParams,
          response: { 200: messageEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        await deps.tariffGrids.remove(actorOf(request), request.params.tariff_grid);
        return { message: 'Tariff grid deleted' };
      },
    );
  };
}
