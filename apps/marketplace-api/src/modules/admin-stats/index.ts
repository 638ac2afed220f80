/** The admin-stats module's public entry: what the rest of the app may use of it. */
export { bucketOf, bucketSeries, within } from './admin-stats.repository.js';
export { adminStatsRoutes } from './admin-stats.routes.js';
export { createAdminStatsService } from './admin-stats.service.js';
