/** The activity-log module's public entry: the one recorder, and the administrators' reads of the log. */
import type { Db } from '../../db/index.js';
import { activityLogRoutes } from './activity-log.routes.js';
import { createActivityLogService } from './activity-log.service.js';

export { type ActivityRecorder, createActivityRecorder, userSubject } from './activity-log.recorder.js';
export { ActivityEntryResponse, lowerBound, presentActivity, rangeReversed, upperBound } from './activity-log.schemas.js';
export { type ActivityLogService } from './activity-log.service.js';

/** The activity log's reads (the recorder is made once, in app.ts). */
export function activityLogModule({ db }: { db: Db }) {
  const activityLog = createActivityLogService({ db });
  return { activityLog, routes: activityLogRoutes({ activityLog }) };
}
