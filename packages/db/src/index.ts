// The package's public entry: it only re-exports. Files inside the package import each other
// directly, never this one, so that no import cycle runs through it.
export { sql } from 'drizzle-orm';
export type { Database, DbOrTx, Transaction } from './types.js';
export { onceAcrossInstances, SKIPPED, type DatabaseHandle, type DatabaseOptions, type Exclusive, type PoolStats, type SchemaStatus, type StartupAttempt } from './handle.js';
export { createDatabase } from './connect.js';
export { openPglite, type ExtensionName } from './pglite.js';
export { appSchemaName } from './migrations.js';
export { arrayLiteral, escapeLike, executeCount, pageWithTotal, preparedOnce, queryRows, sqlState, timestamptz, totalOfList } from './queries.js';
export { claimedStatement, claimedWrite, inClaimedWork, runClaimedWork, withGenericPlan, withTransaction, type ClaimedWork, type ClaimMark } from './transactions.js';
export { copyText } from './copy.js';
export { countHit, createRequestCounter, purgeExpiredCounters, rateLimitCounters, rateLimitCountersTable, type RequestCounter, type RequestCounterOptions } from './counters.js';
export { createIdempotencyStore, idempotencyKeys, idempotencyKeysTable, purgeExpiredIdempotencyKeys, type ClaimInput, type IdempotencyClaim, type IdempotencyStore, type RememberedAnswer } from './idempotency.js';
export { createFanout, fanoutPayloadsTable, NOTIFY_MAX_BYTES, type Fanout, type FanoutOptions } from './fanout.js';
export { ACQUIRE_TIMEOUT_MS, asUnavailable, createCircuit, DatabaseUnavailableError, isDatabaseUnavailable, OUTAGE_OPTIONS, RETRY_AFTER_SECONDS, type Circuit } from './faults.js';
export { describeError, runMigrateCli, type MigrateCliOptions } from './migrate-cli.js';
