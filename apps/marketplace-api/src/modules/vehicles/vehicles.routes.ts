import { requireActor } from '@repo/auth';
import type { FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses, messageEnvelope, paginatedEnvelope, paginationQuery } from '@repo/schemas';
import { z } from 'zod';
import { actorOf } from '../../lib/context.js';
import type { VehiclesService } from './vehicles.service.js';
import {
  CreateVehicleBody,
  IdentifyBody,
  LookupQuery,
  presentRepairVehicle,
  presentVehicle,
  RepairVehicleResponse,
  UpdateVehicleBody,
  VehicleParams,
  VehicleResponse,
} from './vehicles.schemas.js';

const ListQuery = paginationQuery({ defaultPerPage: 20, maxPerPage: 100 });

export function vehiclesRoutes(deps: { vehicles: VehiclesService }): FastifyPluginAsyncZod {
  return async (app) => {
    const clientOnly = app.auth.requireRole('client');
    const security = [{ bearerAuth: [] }];

    app.get(
      '/vehicles',
      {
        onRequest: clientOnly,
        schema: {
          operationId: 'listVehicles',
          tags: ['vehicles'],
          summary: "The signed-in client's vehicles",
          security,
          querystring: ListQuery,
          response: { 200: paginatedEnvelope(VehicleResponse), ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await deps.vehicles.list(actorOf(request), request.query.page, request.query.per_page);
        return { data: rows.map(presentVehicle), meta };
      },
    );

    app.post(
      '/vehicles',
      {
        onRequest: clientOnly,
        schema: {
          operationId: 'createVehicle',
          tags: ['vehicles'],
          summary: 'Add a vehicle to the garage',
          security,
          body: CreateVehicleBody,
          response: { 201: envelope(VehicleResponse), ...errorResponses(400, 401, 403, 409, 422, 429) },
        },
      },
      async (request, reply) => {
        const vehicle = await deps.vehicles.create(actorOf(request), request.body);
        return reply.status(201).send({ data: presentVehicle(vehicle), message: 'Vehicle added' });
      },
    );

    app.get(
      '/vehicles/lookup',
      {
        schema: {
          operationId: 'lookupVehicle',
          tags: ['vehicles'],
          summary: 'Identify a vehicle by plate or VIN in the repair data (public)',
          security: [],
          querystring: LookupQuery,
          response: { 200: envelope(RepairVehicleResponse), ...errorResponses(404, 422, 429, 502) },
        },
      },
      async (request) => ({ data: presentRepairVehicle(await deps.vehicles.lookup(request.query)) }),
    );

    app.get(
      '/vehicles/:vehicle',
      {
        onRequest: clientOnly,
        schema: {
          operationId: 'showVehicle',
          tags: ['vehicles'],
          summary: 'One of your vehicles',
          security,
          params: VehicleParams,
          response: { 200: envelope(VehicleResponse), ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => ({ data: presentVehicle(await deps.vehicles.get(actorOf(request), request.params.vehicle)) }),
    );

    for (const method of ['PUT', 'PATCH'] as const) {
      app.route({
        method,
        url: '/vehicles/:vehicle',
        onRequest: clientOnly,
        schema: {
          operationId: method === 'PUT' ? 'updateVehicle' : 'patchVehicle',
          tags: ['vehicles'],
          summary: 'Change one of your vehicles (only the fields given)',
          security,
          params: VehicleParams,
          body: UpdateVehicleBody,
          response: { 200: envelope(VehicleResponse), ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
        handler: async (request) => {
          const vehicle = await deps.vehicles.update(actorOf(request), request.params.vehicle, request.body);
          return { data: presentVehicle(vehicle), message: 'Vehicle updated' };
        },
      });
    }

    app.delete(
      '/vehicles/:vehicle',
      {
        onRequest: clientOnly,
        schema: {
          operationId: 'deleteVehicle',
          tags: ['vehicles'],
          summary: 'Remove a vehicle from the garage (its history stays with past requests)',
          security,
          params: VehicleParams,
          response: { 200: messageEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        await deps.vehicles.remove(actorOf(request), request.params.vehicle);
        return { message: 'Vehicle deleted' };
      },
    );

    app.post(
      '/vehicles/:vehicle/identify',
      {
        onRequest: clientOnly,
        schema: {
          operationId: 'identifyVehicle',
          tags: ['vehicles'],
          summary: 'Link a vehicle to its repair-data vehicle by its VIN or plate',
          security,
          params: VehicleParams,
          body: IdentifyBody.nullish(),
          response: {
            200: envelope(z.object({ vehicle: VehicleResponse, repairdata_vehicle: RepairVehicleResponse })),
            ...errorResponses(400, 401, 403, 404, 409, 422, 429, 502),
          },
        },
      },
      async (request) => {
        const { vehicle, repairVehicle } = await deps.vehicles.identify(actorOf(request), request.params.vehicle, request.body ?? {});
        return { data: { vehicle: presentVehicle(vehicle), repairdata_vehicle: presentRepairVehicle(repairVehicle) }, message: 'Vehicle identified' };
      },
    );

    app.post(
      '/prestataire/vehicle/lookup',
      {
        onRequest: app.auth.requireRole('prestataire'),
        schema: {
          operationId: 'prestataireLookupVehicle',
          tags: ['vehicles'],
          summary: "Identify a customer's vehicle by plate or VIN",
          security,
          body: LookupQuery,
          response: { 200: envelope(RepairVehicleResponse), ...errorResponses(400, 401, 403, 404, 422, 429, 502) },
        },
      },
      async (request) => {
        requireActor(request);
        return { data: presentRepairVehicle(await deps.vehicles.lookup(request.body)) };
      },
    );
  };
}
