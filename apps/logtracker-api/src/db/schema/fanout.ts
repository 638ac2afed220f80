// Batches of logs for other instances' live tails too big for a notification (see createFanout in @repo/db).
export { fanoutPayloads } from '@repo/db';
