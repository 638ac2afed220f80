/** The repairdata module's public entry: what the rest of the app may use of it. */
import { createRepairData } from '../../integrations/repairdata/index.js';
import type { ModuleContext } from '../context.js';
import { repairDataRoutes } from './repairdata.routes.js';
import { createRepairDataService } from './repairdata.service.js';

/** Repair data: the vendor's API behind the database cache, or the bundled dataset, and its routes. */
export function repairDataModule({ config, db, app }: ModuleContext) {
  const repairData = createRepairData(config, { db, log: app.log });
  return { repairData, routes: repairDataRoutes({ repairData: createRepairDataService({ repairData }) }) };
}
