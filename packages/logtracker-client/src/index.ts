export { Batcher, DEFAULT_MAX_BYTES, type Batch, type BatcherEvent, type BatcherOptions, type BatcherStats, type Send, type SendOutcome } from './batcher.js';
export { ciContext, type CiContext } from './ci-context.js';
export {
  batchSender,
  createLogTrackerClient,
  outcomeOf,
  type BatchSenderOptions,
  type components,
  type LogTrackerClient,
  type LogTrackerClientOptions,
  type operations,
  type paths,
  type SendBatchOptions,
} from './client.js';
export { createClock, isoMicros, microsOf, type Clock } from './clock.js';
export { LEVELS, MAX_MESSAGE_LENGTH, type Level, type LogEntry } from './entry.js';
export { levelOf, markedLevel, stripAnsi } from './levels.js';
export { LineSplitter } from './lines.js';
export { parseLine, type LineDefaults } from './parse-line.js';
export { DEFAULT_BACKOFF, parseRetryAfter, retryDelay, type Backoff } from './retry.js';
export { createShipper, type Shipper, type ShipperOptions } from './shipper.js';
