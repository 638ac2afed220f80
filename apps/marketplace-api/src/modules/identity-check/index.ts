/** The identity-check module's public entry: what the rest of the app may use of it. */
export { kycRoutes } from './identity-check.routes.js';
export { createKycService } from './identity-check.service.js';
