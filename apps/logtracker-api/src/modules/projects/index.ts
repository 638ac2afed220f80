/** The projects module's public entry: what the rest of the app may use of it. */
import { findForUpdate, updateProject } from './projects.repository.js';

export { projectsRoutes } from './projects.routes.js';
export { ProjectScopedParams } from './projects.schemas.js';
export { createProjectAccess, createProjectsService, type ProjectAccess } from './projects.service.js';

/** The records other modules read and change in their own transactions. */
export const projectRecords = { findForUpdate, updateProject };
