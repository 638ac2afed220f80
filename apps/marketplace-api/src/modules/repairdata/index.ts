/** The repairdata module's public entry: what the rest of the app may use of it. */
export { repairDataRoutes } from './repairdata.routes.js';
export { createRepairDataService } from './repairdata.service.js';
