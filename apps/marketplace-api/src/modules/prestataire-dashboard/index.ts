/** The prestataire-dashboard module's public entry: what the rest of the app may use of it. */
import type { ModuleContext, Mounted } from '../context.js';
import { prestataireHomeRoutes } from './home.routes.js';
import { createPrestataireHomeService } from './home.service.js';
import { prestataireDashboardRoutes } from './stats.routes.js';
import { createPrestataireDashboardService } from './stats.service.js';

/** A prestataire's home and agenda, and its dashboard and statistics (its time zone). */
export function prestataireDashboardModule({ db }: ModuleContext): Mounted {
  return {
    routes: async (api) => {
      await api.register(prestataireHomeRoutes({ prestataireHome: createPrestataireHomeService({ db }) }));
      await api.register(prestataireDashboardRoutes({ prestataireDashboard: createPrestataireDashboardService({ db }) }));
    },
  };
}
