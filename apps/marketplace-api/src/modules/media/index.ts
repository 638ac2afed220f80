/** The media module's public entry: what the rest of the app may use of it. */
export { mediaRoutes } from './media.routes.js';
