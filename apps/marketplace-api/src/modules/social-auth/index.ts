/** The social-auth module's public entry: what the rest of the app may use of it. */
export { socialAuthRoutes } from './social-auth.routes.js';
export { createSocialAuthService } from './social-auth.service.js';
