/** The gallery module's public entry: what the rest of the app may use of it. */
import type { ModuleContext, Mounted } from '../context.js';
import { galleryRoutes } from './gallery.routes.js';
import { createGalleryService } from './gallery.service.js';

/** A prestataire's gallery of photos. */
export function galleryModule({ db, storage, recorder, app }: ModuleContext): Mounted {
  return { routes: galleryRoutes({ gallery: createGalleryService({ db, storage, recorder, log: app.log }) }) };
}
