/** The project-config module's public entry: what the rest of the app may use of it. */
export { projectConfigRoutes } from './project-config.routes.js';
export { createProjectConfigService } from './project-config.service.js';
