/** The activity-log module's public entry: what the rest of the app may use of it. */
import type { ModuleContext } from '../context.js';
import { activityLogRoutes } from './activity-log.routes.js';
import { createActivityLogService } from './activity-log.service.js';

export { type ActivityRecorder, createActivityRecorder, userSubject } from './activity-log.recorder.js';
export { ActivityEntryResponse, lowerBound, presentActivity, rangeReversed, upperBound } from './activity-log.schemas.js';
export { type ActivityLogService } from './activity-log.service.js';

/** The activity log: the one recorder (app.ts) and the administrators' reads of it. */
export function activityLogModule(_ctx: ModuleContext) {
  const activityLog = createActivityLogService({ db: _ctx.db });
  return { activityLog, routes: activityLogRoutes({ activityLog }) };
}
