/** The prestataire-services module's public entry: what the rest of the app may use of it. */
import type { ModuleContext, Mounted } from '../context.js';
import { prestataireServicesRoutes } from './prestataire-services.routes.js';
import { createPrestataireServicesService } from './prestataire-services.service.js';

/** The services a prestataire offers, at its own price and duration. */
export function prestataireServicesModule({ db, recorder }: ModuleContext): Mounted {
  return { routes: prestataireServicesRoutes({ prestataireServices: createPrestataireServicesService({ db, recorder }) }) };
}
