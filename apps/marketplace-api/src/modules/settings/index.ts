/** The settings module's public entry: what the rest of the app may use of it. */
export { settingsRoutes } from './settings.routes.js';
export { createSettingsService, type SettingsService } from './settings.service.js';
