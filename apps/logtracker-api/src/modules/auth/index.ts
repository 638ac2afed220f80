/** The auth module's public entry: what the rest of the app may use of it. */
export { accountSessions } from './auth.repository.js';
export { authRoutes } from './auth.routes.js';
export { createAuthService } from './auth.service.js';
