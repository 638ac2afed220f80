import { fanoutPayloadsTable, idempotencyKeysTable, rateLimitCountersTable } from '@repo/db';
import { logtrackerSchema } from './pg-schema.js';

// Batches of logs for other instances' live tails too big for a notification (see createFanout in @repo/db).
export const fanoutPayloads = fanoutPayloadsTable(logtrackerSchema);
// Counters every instance shares: request rate limits, sign-in and e-mail throttles (see @repo/db counters.ts).
export const rateLimitCounters = rateLimitCountersTable(logtrackerSchema);
// The Idempotency-Key of every retry-safe write, shared by every instance (see @repo/db idempotency.ts, DESIGN.md §10).
export const idempotencyKeys = idempotencyKeysTable(logtrackerSchema);
