// Messages for every instance's real-time subscribers too big for a notification (see createFanout in @repo/db).
export { fanoutPayloads } from '@repo/db';
