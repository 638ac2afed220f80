import { AppError, pageMeta, pageOffset } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { Vehicle } from '../../db/schema/index.js';
import { RepairDataUnavailableError, type IdentifyQuery, type RepairDataProvider, type RepairVehicle } from '../../integrations/repairdata/repairdata.js';
import type { Actor } from '../../lib/context.js';
import { isUniqueViolation } from '../../lib/db-errors.js';
import * as repo from './vehicles.repository.js';
import type { CreateVehicleBody, UpdateVehicleBody } from './vehicles.schemas.js';

function duplicate(field: 'vin' | 'plate'): AppError {
  return new AppError('conflict', `You already have a vehicle with this ${field === 'vin' ? 'VIN' : 'plate'}`, {
    errors: { [field]: [`The ${field} is already registered on another of your vehicles`] },
  });
}

/** Calls the repair-data source, turning its outage into a 502 in the envelope. */
export async function fromRepairData<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof RepairDataUnavailableError) {
      throw new AppError('bad_gateway', 'The repair-data service is unavailable; try again later', { cause: error });
    }
    throw error;
  }
}

export function createVehiclesService(deps: { db: DbTx; repairData: RepairDataProvider }) {
  const { db, repairData } = deps;

  async function checkDuplicates(ownerId: number, values: { vin?: string | null; plate?: string | null }, exceptId?: number) {
    if (values.vin && (await repo.findDuplicate(db, ownerId, 'vin', values.vin, exceptId))) throw duplicate('vin');
    if (values.plate && (await repo.findDuplicate(db, ownerId, 'plate', values.plate, exceptId))) throw duplicate('plate');
  }

  /** Writes, turning a concurrent duplicate caught by the unique indexes into the same 409. */
  async function guarded<T>(values: { vin?: string | null }, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      if (isUniqueViolation(error)) throw duplicate(values.vin ? 'vin' : 'plate');
      throw error;
    }
  }

  async function identifyOrNotFound(query: IdentifyQuery): Promise<RepairVehicle> {
    const found = await fromRepairData(() => repairData.identify(query));
    if (!found) throw new AppError('not_found', 'No vehicle matches this VIN or plate in the repair data');
    return found;
  }

  return {
    async list(actor: Actor, page: number, perPage: number) {
      const { rows, total } = await repo.listVehicles(db, actor.userId, perPage, pageOffset(page, perPage));
      return { rows, meta: pageMeta(page, perPage, total) };
    },

    async get(actor: Actor, id: number): Promise<Vehicle> {
      const vehicle = await repo.findOwnVehicle(db, actor.userId, id);
      if (!vehicle) throw AppError.notFound('Vehicle');
      return vehicle;
    },

    async create(actor: Actor, body: CreateVehicleBody) {
      const ownerId = actor.userId;
      await checkDuplicates(ownerId, body);
      return guarded(body, () =>
        repo.insertVehicle(db, {
          ownerId,
          make: body.make,
          model: body.model,
          year: body.year,
          vin: body.vin ?? null,
          plate: body.plate ?? null,
          fuel: body.fuel ?? null,
          engine: body.engine ?? null,
          mileageKm: body.mileage ?? null,
          nickname: body.nickname ?? null,
        }),
      );
    },

    async update(actor: Actor, id: number, body: UpdateVehicleBody) {
      const ownerId = actor.userId;
      const current = await repo.findOwnVehicle(db, ownerId, id);
      if (!current) throw AppError.notFound('Vehicle');
      await checkDuplicates(ownerId, body, id);
      const identityChanged =
        (body.vin !== undefined && body.vin !== current.vin) || (body.plate !== undefined && body.plate !== current.plate);
      const updated = await guarded(body, () =>
        repo.updateVehicle(db, ownerId, id, {
          ...(body.make !== undefined ? { make: body.make } : {}),
          ...(body.model !== undefined ? { model: body.model } : {}),
          ...(body.year !== undefined ? { year: body.year } : {}),
          ...(body.vin !== undefined ? { vin: body.vin } : {}),
          ...(body.plate !== undefined ? { plate: body.plate } : {}),
          ...(body.fuel !== undefined ? { fuel: body.fuel } : {}),
          ...(body.engine !== undefined ? { engine: body.engine } : {}),
          ...(body.mileage !== undefined ? { mileageKm: body.mileage } : {}),
          ...(body.nickname !== undefined ? { nickname: body.nickname } : {}),
          // A new VIN or plate may be another vehicle: its repair-data identity no longer holds.
          ...(identityChanged ? { repairdataVehicleId: null, identifiedAt: null } : {}),
        }),
      );
      if (!updated) throw AppError.notFound('Vehicle');
      return updated;
    },

    async remove(actor: Actor, id: number) {
      if (!(await repo.softDeleteVehicle(db, actor.userId, id))) throw AppError.notFound('Vehicle');
    },

    /** Public and prestataire lookup: the repair-data vehicle for a VIN or plate. */
    lookup: identifyOrNotFound,

    /** Links a garage vehicle to its repair-data vehicle, by the VIN or plate given (then saved) or its own. */
    async identify(actor: Actor, id: number, override: { vin?: string; plate?: string }) {
      const ownerId = actor.userId;
      const vehicle = await repo.findOwnVehicle(db, ownerId, id);
      if (!vehicle) throw AppError.notFound('Vehicle');
      const vin = override.vin ?? vehicle.vin;
      const plate = override.plate ?? vehicle.plate;
      if (!vin && !plate) {
        throw AppError.validation({ vin: ['The vehicle has no VIN or plate; give one to identify it'] });
      }
      await checkDuplicates(ownerId, override, id);
      const found = await identifyOrNotFound(vin ? { vin } : { plate: plate! });
      // A VIN or plate given here is the vehicle's own from now on.
      const updated = await guarded(override, () =>
        repo.updateVehicle(db, ownerId, id, { ...override, repairdataVehicleId: found.id, identifiedAt: new Date() }),
      );
      if (!updated) throw AppError.notFound('Vehicle');
      return { vehicle: updated, repairVehicle: found };
    },
  };
}

export type VehiclesService = ReturnType<typeof createVehiclesService>;
