/** The admin-services module's public entry: what the rest of the app may use of it. */
import type { ModuleContext, Mounted } from '../context.js';
import { adminServicesRoutes } from './admin-services.routes.js';
import { createAdminServicesService } from './admin-services.service.js';

/** The administrators' catalogue: categories and services. */
export function adminServicesModule({ db, recorder }: ModuleContext): Mounted {
  return { routes: adminServicesRoutes({ adminServices: createAdminServicesService({ db, recorder }) }) };
}
