/** The labor module's public entry: what the rest of the app may use of it. */
export { laborRoutes } from './labor.routes.js';
export { createLaborService } from './labor.service.js';
