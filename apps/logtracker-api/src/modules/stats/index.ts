/** The stats module's public entry: what the rest of the app may use of it. */
import { countByLevel, topSources } from './stats.repository.js';

export { statsRoutes } from './stats.routes.js';
export { RANGE_SPEC, TIME_RANGES, timeRange } from './stats.schemas.js';
export { createStatsService } from './stats.service.js';

/** The records other modules read and change in their own transactions. */
export const statsRecords = { countByLevel, topSources };
