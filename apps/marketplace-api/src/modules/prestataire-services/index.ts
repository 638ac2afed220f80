/** The prestataire-services module's public entry: what the rest of the app may use of it. */
export { prestataireServicesRoutes } from './prestataire-services.routes.js';
export { createPrestataireServicesService } from './prestataire-services.service.js';
