import { fanoutPayloadsTable } from '@repo/db';
import { marketplaceSchema } from './pg-schema.js';

// Messages for every instance's real-time subscribers too big for a notification (see createFanout in @repo/db).
export const fanoutPayloads = fanoutPayloadsTable(marketplaceSchema);
