import { AppError } from '@repo/http';
import type { RepairDataProvider } from '../../integrations/repairdata/repairdata.js';
import { fromRepairData } from '../vehicles/index.js';

/**
 * Reads of the repair-data source for signed-in users. "Not found" names what is missing; when a
 * task or system lookup comes back empty, the vehicle is checked to tell the two apart (an answer
 * the cache usually already holds).
 */
export function createRepairDataService(deps: { repairData: RepairDataProvider }) {
  const { repairData } = deps;

  async function requireVehicle(vehicleId: string) {
    const vehicle = await fromRepairData(() => repairData.vehicle(vehicleId));
    if (!vehicle) throw AppError.notFound('Vehicle');
    return vehicle;
  }

  return {
    profile: requireVehicle,

    async tasks(vehicleId: string, query: { q?: string; systemCode?: string }) {
      const tasks = await fromRepairData(() => repairData.searchTasks(vehicleId, query));
      if (!tasks) throw AppError.notFound('Vehicle');
      return tasks;
    },

    async time(vehicleId: string, taskCode: string) {
      const time = await fromRepairData(() => repairData.repairTime(vehicleId, taskCode));
      if (time) return time;
      await requireVehicle(vehicleId);
      throw AppError.notFound('Task');
    },

    async times(vehicleId: string, taskCodes: string[]) {
      const result = await fromRepairData(() => repairData.repairTimes(vehicleId, taskCodes));
      if (!result) throw AppError.notFound('Vehicle');
      return result;
    },

    async procedures(vehicleId: string, systemCode: string) {
      const procedures = await fromRepairData(() => repairData.procedures(vehicleId, systemCode));
      if (procedures) return procedures;
      await requireVehicle(vehicleId);
      throw AppError.notFound('System');
    },
  };
}

export type RepairDataService = ReturnType<typeof createRepairDataService>;
