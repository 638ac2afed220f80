/** The settings module's public entry: the platform settings' service and routes. */
import { settingsRoutes } from './settings.routes.js';
import type { SettingsService } from './settings.service.js';

export { createSettingsService, type SettingsService } from './settings.service.js';

/** The platform settings' routes (the service is made once for all modules in modules/index.ts). */
export function settingsModule({ settings }: { settings: SettingsService }) {
  return { routes: settingsRoutes({ settings }) };
}
