/** The patterns module's public entry: what the rest of the app may use of it. */
import { patternsByIds, patternsFirstSeenSince, topPatterns } from './patterns.repository.js';

export { evaluateSample, formatTable, sampleName, type SampleResult } from './evaluation.js';
export { deleteExpiredTags, patternOfLogColumn, patternsOfLogs } from './patterns.repository.js';
export { createPatternMiningService, type PatternMiningService } from './patterns.service.js';

/** The records other modules read and change in their own transactions. */
export const patternRecords = { patternsByIds, patternsFirstSeenSince, topPatterns };
