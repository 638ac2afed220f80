/** The media module's public entry: what the rest of the app may use of it. */
import type { ModuleContext, Mounted } from '../context.js';
import { mediaRoutes } from './media.routes.js';

/** The uploaded files, served. */
export function mediaModule({ storage }: ModuleContext): Mounted {
  return { routes: mediaRoutes({ storage }) };
}
