/** The prestataire-profile module's public entry: what the rest of the app may use of it. */
export { lockProfile } from './prestataire-profile.repository.js';
export { prestataireProfileRoutes } from './prestataire-profile.routes.js';
export { createPrestataireProfileService } from './prestataire-profile.service.js';
