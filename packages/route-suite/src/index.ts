export { defineRouteSuite, type Caller, type RouteSuiteOptions, type SuiteApp } from './suite.js';
export { readOperations, resolveRef, unresolvedRefs, allowsAnonymous, fillPath, type OpenApiDocument, type SuiteOperation, type JsonSchema } from './openapi.js';
export { readSettings, DEFAULT_RUNS, DEFAULT_SEED, type SuiteSettings } from './settings.js';
export { hostileRequest, jsonFor, bodyFor, nastyString, type HostileParts, type Mode } from './arbitraries.js';
export { sampleValid } from './sample.js';
export { forgedTokens, readClaims } from './tokens.js';
export { encodeUrlText, decodeUrlText, couldNameARow } from './encoding.js';
export { SHARED_STATUSES, allowedStatuses, envelopeProblems, hostileProblems, describeExchange, type ErrorTable, type Exchange } from './verdict.js';
