/** The prestataire-vetting module's public entry: what the rest of the app may use of it. */
import type { ModuleContext, Mounted } from '../context.js';
import { adminPrestatairesRoutes } from './admin-review.routes.js';
import { createAdminPrestatairesService } from './admin-review.service.js';
import { complianceRoutes } from './compliance.routes.js';
import { createComplianceService } from './compliance.service.js';
import { documentsRoutes } from './documents.routes.js';
import { createDocumentsService } from './documents.service.js';

/**
 * Vetting prestataires: the documents they upload, the administrators' validation, rejection and
 * requests for documents, suspension and reinstatement, documents about to expire.
 */
export function prestataireVettingModule({ db, storage, clock, recorder, mailer, outbox }: ModuleContext): Mounted {
  return {
    routes: async (api) => {
      await api.register(documentsRoutes({ documents: createDocumentsService({ db, storage, clock, recorder, outbox }) }));
      await api.register(adminPrestatairesRoutes({ adminPrestataires: createAdminPrestatairesService({ db, mailer, clock, recorder, outbox }) }));
      await api.register(complianceRoutes({ compliance: createComplianceService({ db, mailer, clock, recorder, outbox }) }));
    },
  };
}
