import { fanoutPayloadsTable } from '@repo/db';
import { logtrackerSchema } from './pg-schema.js';

// Batches of logs for other instances' live tails too big for a notification (see createFanout in @repo/db).
export const fanoutPayloads = fanoutPayloadsTable(logtrackerSchema);
