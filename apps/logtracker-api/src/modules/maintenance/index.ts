/** The maintenance module's public entry: what the rest of the app may use of it. */
export { createLogStatisticsService } from './log-statistics.service.js';
export { createMaintenanceService, type MaintenanceResult } from './maintenance.service.js';
