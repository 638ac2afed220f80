import { fanoutPayloadsTable, idempotencyKeysTable, rateLimitCountersTable } from '@repo/db';
import { marketplaceSchema } from './pg-schema.js';

// Messages for every instance's real-time subscribers too big for a notification (see createFanout in @repo/db).
export const fanoutPayloads = fanoutPayloadsTable(marketplaceSchema);
// Counters every instance shares: request rate limits, sign-in and e-mail throttles (see @repo/db counters.ts).
export const rateLimitCounters = rateLimitCountersTable(marketplaceSchema);
// The Idempotency-Key of every retry-safe write, shared by every instance (see @repo/db idempotency.ts, DESIGN.md §10).
export const idempotencyKeys = idempotencyKeysTable(marketplaceSchema);
