/** The prestataires module's public entry: what the rest of the app may use of it. */
export { findVisible, visiblePrestataire } from './prestataires.repository.js';
export { prestatairesRoutes } from './prestataires.routes.js';
export { PrestataireParams } from './prestataires.schemas.js';
export { createPrestatairesService } from './prestataires.service.js';
