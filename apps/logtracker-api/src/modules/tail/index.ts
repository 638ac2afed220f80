/** The tail module's public entry: what the rest of the app may use of it. */
export { tailRoutes } from './tail.routes.js';
export { createTailService } from './tail.service.js';
