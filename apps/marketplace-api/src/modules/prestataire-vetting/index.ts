/** The prestataire-vetting module's public entry: what the rest of the app may use of it. */
export { adminPrestatairesRoutes } from './admin-review.routes.js';
export { createAdminPrestatairesService } from './admin-review.service.js';
export { complianceRoutes } from './compliance.routes.js';
export { createComplianceService } from './compliance.service.js';
export { documentsRoutes } from './documents.routes.js';
export { createDocumentsService } from './documents.service.js';
