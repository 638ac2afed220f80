import { withTransaction } from '@repo/db';
import { AppError, pageMeta, pageOffset } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { TariffGrid, VehicleCategory } from '../../db/schema/index.js';
import type { Actor } from '../../lib/context.js';
import { isUniqueViolation } from '../../lib/db-errors.js';
import type { ActivityRecorder } from '../activity-log/index.js';
import * as repo from './tariff-grids.repository.js';
import { presentTariffGrid, type TariffGridBody, type TariffGridPatch } from './tariff-grids.schemas.js';

function activeDuplicate(): AppError {
  return new AppError('conflict', 'An active tariff grid already exists for this vehicle category and region', {
    errors: { vehicle_category: ['Deactivate or change the existing grid first'] },
  });
}

/** Runs a write, answering the unique index's refusal of a second active grid as a 409. */
async function guarded<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (isUniqueViolation(error)) throw activeDuplicate();
    throw error;
  }
}

const audit = (g: TariffGrid) => presentTariffGrid(g) as unknown as Record<string, unknown>;

export function createTariffGridsService(deps: { db: DbTx; recorder: ActivityRecorder }) {
  const { db, recorder } = deps;
  return {
    async list(filters: { vehicleCategory?: VehicleCategory; regionCode?: string; active?: boolean }, page: number, perPage: number) {
      const { rows, total } = await repo.listGrids(db, filters, perPage, pageOffset(page, perPage));
      return { rows, meta: pageMeta(page, perPage, total) };
    },

    async get(id: number) {
      const grid = await repo.findGrid(db, id);
      if (!grid) throw AppError.notFound('Tariff grid');
      return grid;
    },

    async create(actor: Actor, body: TariffGridBody) {
      return guarded(() =>
        withTransaction(db, async (tx) => {
          const grid = await repo.insertGrid(tx, {
            name: body.name,
            vehicleCategory: body.vehicle_category,
            regionCode: body.region_code ?? null,
            hourlyRateCents: body.hourly_rate_cents,
            active: body.active ?? true,
          });
          await recorder.record(actor, 'tariff_grid.created', { type: 'tariff_grid', id: grid.id }, { after: audit(grid) }, tx);
          return grid;
        }),
      );
    },

    async update(actor: Actor, id: number, body: TariffGridPatch) {
      return guarded(() =>
        withTransaction(db, async (tx) => {
          const before = await repo.findGrid(tx, id);
          if (!before) throw AppError.notFound('Tariff grid');
          const grid = await repo.updateGrid(tx, id, {
            ...(body.name !== undefined ? { name: body.name } : {}),
            ...(body.vehicle_category !== undefined ? { vehicleCategory: body.vehicle_category } : {}),
            ...(body.region_code !== undefined ? { regionCode: body.region_code } : {}),
            ...(body.hourly_rate_cents !== undefined ? { hourlyRateCents: body.hourly_rate_cents } : {}),
            ...(body.active !== undefined ? { active: body.active } : {}),
          });
          if (!grid) throw AppError.notFound('Tariff grid');
          await recorder.record(actor, 'tariff_grid.updated', { type: 'tariff_grid', id }, { before: audit(before), after: audit(grid) }, tx);
          return grid;
        }),
      );
    },

    async remove(actor: Actor, id: number) {
      await withTransaction(db, async (tx) => {
        const grid = await repo.deleteGrid(tx, id);
        if (!grid) throw AppError.notFound('Tariff grid');
        await recorder.record(actor, 'tariff_grid.deleted', { type: 'tariff_grid', id }, { before: audit(grid) }, tx);
      });
    },

    applicable: (vehicleCategory: string, regionCode: string | null) => repo.applicableGrid(db, vehicleCategory, regionCode),
  };
}

export type TariffGridsService = ReturnType<typeof createTariffGridsService>;
