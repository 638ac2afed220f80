/** The prestataires module's public entry: what the rest of the app may use of it. */
import type { ModuleContext, Mounted } from '../context.js';
import { prestatairesRoutes } from './prestataires.routes.js';
import { createPrestatairesService } from './prestataires.service.js';

export { findVisible, visiblePrestataire } from './prestataires.repository.js';
export { PrestataireParams } from './prestataires.schemas.js';

/** Finding prestataires: search by place, service and rating, and a prestataire's public page. */
export function prestatairesModule({ db }: ModuleContext): Mounted {
  return { routes: prestatairesRoutes({ prestataires: createPrestatairesService({ db }) }) };
}
