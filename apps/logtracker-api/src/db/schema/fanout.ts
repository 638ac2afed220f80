// Batches of logs for other instances' live tails too big for a notification (see createFanout in @repo/db).
export { fanoutPayloads } from '@repo/db';
// Counters every instance shares: request rate limits, sign-in and e-mail throttles (see @repo/db counters.ts).
export { rateLimitCounters } from '@repo/db';
