import { fanoutPayloadsTable, rateLimitCountersTable } from '@repo/db';
import { marketplaceSchema } from './pg-schema.js';

// Messages for every instance's real-time subscribers too big for a notification (see createFanout in @repo/db).
export const fanoutPayloads = fanoutPayloadsTable(marketplaceSchema);
// Counters every instance shares: request rate limits, sign-in and e-mail throttles (see @repo/db counters.ts).
export const rateLimitCounters = rateLimitCountersTable(marketplaceSchema);
