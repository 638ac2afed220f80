import type { FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses } from '@repo/schemas';
import { z } from 'zod';
import type { RepairDataService } from './repairdata.service.js';
import {
  BatchTimesBody,
  BatchTimesResponse,
  presentProcedure,
  presentProfile,
  presentTask,
  presentTime,
  RepairProcedureResponse,
  RepairTaskResponse,
  RepairTimeResponse,
  RepairVehicleProfileResponse,
  SystemParams,
  TaskParams,
  TasksQuery,
  VehicleIdParams,
} from './repairdata.schemas.js';

const security = [{ bearerAuth: [] }];
const tags = ['repairdata'];

/** Vehicle technical data for any signed-in user; `vehicleId` is the repair-data source's id. */
export function repairDataRoutes(deps: { repairData: RepairDataService }): FastifyPluginAsyncZod {
  return async (app) => {
    app.addHook('onRequest', app.auth.authenticate);

    app.get(
      '/repairdata/vehicles/:vehicleId',
      {
        schema: {
          operationId: 'repairDataVehicle',
          tags,
          summary: "A vehicle's technical profile: engine, systems and service intervals",
          security,
          params: VehicleIdParams,
          response: { 200: envelope(RepairVehicleProfileResponse), ...errorResponses(401, 404, 422, 429, 502) },
        },
      },
      async (request) => ({ data: presentProfile(await deps.repairData.profile(request.params.vehicleId)) }),
    );

    app.get(
      '/repairdata/vehicles/:vehicleId/tasks',
      {
        schema: {
          operationId: 'repairDataSearchTasks',
          tags,
          summary: 'Repair tasks that apply to a vehicle, by free text and/or system',
          security,
          params: VehicleIdParams,
          querystring: TasksQuery,
          response: { 200: envelope(z.array(RepairTaskResponse)), ...errorResponses(401, 404, 422, 429, 502) },
        },
      },
      async (request) => {
        const { q, system } = request.query;
        const tasks = await deps.repairData.tasks(request.params.vehicleId, { q, systemCode: system });
        return { data: tasks.map(presentTask) };
      },
    );

    app.get(
      '/repairdata/vehicles/:vehicleId/tasks/:taskCode/times',
      {
        schema: {
          operationId: 'repairDataTaskTime',
          tags,
          summary: 'Labour time of one task on a vehicle',
          security,
          params: TaskParams,
          response: { 200: envelope(RepairTimeResponse), ...errorResponses(401, 404, 422, 429, 502) },
        },
      },
      async (request) => ({
        data: presentTime(await deps.repairData.time(request.params.vehicleId, request.params.taskCode)),
      }),
    );

    app.post(
      '/repairdata/vehicles/:vehicleId/tasks/batch-times',
      {
        schema: {
          operationId: 'repairDataBatchTimes',
          tags,
          summary: 'Labour times of several tasks on a vehicle; codes without a time are listed in `unknown`',
          security,
          params: VehicleIdParams,
          body: BatchTimesBody,
          response: { 200: envelope(BatchTimesResponse), ...errorResponses(400, 401, 404, 422, 429, 502) },
        },
      },
      async (request) => {
        const { times, unknown } = await deps.repairData.times(request.params.vehicleId, request.body.task_codes);
        return { data: { times: times.map(presentTime), unknown } };
      },
    );

    app.get(
      '/repairdata/vehicles/:vehicleId/systems/:systemCode/procedures',
      {
        schema: {
          operationId: 'repairDataProcedures',
          tags,
          summary: 'Repair procedures for one system of a vehicle, with torque values and warnings',
          security,
          params: SystemParams,
          response: { 200: envelope(z.array(RepairProcedureResponse)), ...errorResponses(401, 404, 422, 429, 502) },
        },
      },
      async (request) => {
        const procedures = await deps.repairData.procedures(request.params.vehicleId, request.params.systemCode);
        return { data: procedures.map(presentProcedure) };
      },
    );
  };
}
