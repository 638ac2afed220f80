/** The analysis module's public entry: what the rest of the app may use of it. */
export { analysisRoutes } from './analysis.routes.js';
export { createAnalysisService } from './analysis.service.js';
