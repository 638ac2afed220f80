/** The prestataire-profile module's public entry: what the rest of the app may use of it. */
import type { ModuleContext, Mounted } from '../context.js';
import { prestataireProfileRoutes } from './prestataire-profile.routes.js';
import { createPrestataireProfileService } from './prestataire-profile.service.js';

export { lockProfile } from './prestataire-profile.repository.js';

/** A prestataire's own profile. */
export function prestataireProfileModule({ db, recorder }: ModuleContext): Mounted {
  return { routes: prestataireProfileRoutes({ prestataireProfile: createPrestataireProfileService({ db, recorder }) }) };
}
