/** The vehicles module's public entry: what the rest of the app may use of it. */
export { findOwnVehicle } from './vehicles.repository.js';
export { vehiclesRoutes } from './vehicles.routes.js';
export { plateField, presentRepairVehicle, RepairVehicleResponse, vinField } from './vehicles.schemas.js';
export { createVehiclesService, fromRepairData } from './vehicles.service.js';
