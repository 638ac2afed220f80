/** The activity-log module's public entry: what the rest of the app may use of it. */
export { type ActivityRecorder, createActivityRecorder, userSubject } from './activity-log.recorder.js';
export { activityLogRoutes } from './activity-log.routes.js';
export { ActivityEntryResponse, lowerBound, presentActivity, rangeReversed, upperBound } from './activity-log.schemas.js';
export { type ActivityLogService, createActivityLogService } from './activity-log.service.js';
