/** The ingest-keys module's public entry: what the rest of the app may use of it. */
export { ingestKeysRoutes } from './ingest-keys.routes.js';
export { createIngestKeysService, presentedIngestKey, type IngestKeysService, type IngestPrincipal } from './ingest-keys.service.js';
