/** The logs module's public entry: what the rest of the app may use of it. */
export { createLogEvents, type IngestedLog, type LogEvents } from './log-events.js';
export { forgetKeptEstimates } from './logs.counts.repository.js';
export { createIngestMetrics, type IngestMetrics } from './logs.metrics.js';
export { logsRoutes } from './logs.routes.js';
export { contextProblem, ListLogsQuery, logLevel, presentLog } from './logs.schemas.js';
export { createLogsService, type LogsService } from './logs.service.js';
export { createLogWrites, type LogWrites } from './logs.writes.js';
export { createWriterAuth, type WriterAuth } from './writer-auth.js';
