/** The admin-stats module's public entry: what the rest of the app may use of it. */
import type { ModuleContext, Mounted } from '../context.js';
import { adminStatsRoutes } from './admin-stats.routes.js';
import { createAdminStatsService } from './admin-stats.service.js';

export { bucketOf, bucketSeries, within } from './admin-stats.repository.js';

/** The administrators' dashboards, statistics and exports (platform time zone), aggregated in SQL. */
export function adminStatsModule({ db, clock }: ModuleContext): Mounted {
  return { routes: adminStatsRoutes({ adminStats: createAdminStatsService({ db, clock }) }) };
}
