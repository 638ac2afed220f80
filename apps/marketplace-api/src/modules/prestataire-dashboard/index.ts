/** The prestataire-dashboard module's public entry: what the rest of the app may use of it. */
export { prestataireHomeRoutes } from './home.routes.js';
export { createPrestataireHomeService } from './home.service.js';
export { prestataireDashboardRoutes } from './stats.routes.js';
export { createPrestataireDashboardService } from './stats.service.js';
