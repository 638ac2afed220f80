/** The content module's public entry: what the rest of the app may use of it. */
export { contentRoutes } from './content.routes.js';
export { createContentService } from './content.service.js';
