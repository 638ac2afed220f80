/** The content module's public entry: what the rest of the app may use of it. */
import type { ModuleContext, Mounted } from '../context.js';
import { contentRoutes } from './content.routes.js';
import { createContentService } from './content.service.js';

/** Editorial content, versioned by administrators, the latest public. */
export function contentModule({ db, recorder }: ModuleContext): Mounted {
  return { routes: contentRoutes({ content: createContentService({ db, recorder }) }) };
}
