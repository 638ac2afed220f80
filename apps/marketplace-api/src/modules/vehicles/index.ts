/** The vehicles module's public entry: what the rest of the app may use of it. */
import type { RepairDataProvider } from '../../integrations/repairdata/index.js';
import type { ModuleContext, Mounted } from '../context.js';
import { vehiclesRoutes } from './vehicles.routes.js';
import { createVehiclesService } from './vehicles.service.js';

export { findOwnVehicle } from './vehicles.repository.js';
export { plateField, presentRepairVehicle, RepairVehicleResponse, vinField } from './vehicles.schemas.js';
export { fromRepairData } from './vehicles.service.js';

/** A client's garage of vehicles, identified by plate or VIN through the repair data. */
export function vehiclesModule({ db }: ModuleContext, more: { repairData: RepairDataProvider }): Mounted {
  return { routes: vehiclesRoutes({ vehicles: createVehiclesService({ db, repairData: more.repairData }) }) };
}
