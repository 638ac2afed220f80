/** The admin-services module's public entry: what the rest of the app may use of it. */
export { adminServicesRoutes } from './admin-services.routes.js';
export { createAdminServicesService } from './admin-services.service.js';
