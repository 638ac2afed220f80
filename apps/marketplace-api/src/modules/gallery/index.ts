/** The gallery module's public entry: what the rest of the app may use of it. */
export { galleryRoutes } from './gallery.routes.js';
export { createGalleryService } from './gallery.service.js';
