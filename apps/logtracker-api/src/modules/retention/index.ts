/** The retention module's public entry: what the rest of the app may use of it. */
export { createRetentionService, type RetentionResult } from './retention.service.js';
