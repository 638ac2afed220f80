/** The settings module's public entry: what the rest of the app may use of it. */
import type { ModuleContext, Mounted } from '../context.js';
import { settingsRoutes } from './settings.routes.js';

export { createSettingsService, type SettingsService } from './settings.service.js';

/** The platform settings' routes (the service is made once for all in modules/index.ts). */
export function settingsModule({ settings }: ModuleContext): Mounted {
  return { routes: settingsRoutes({ settings }) };
}
