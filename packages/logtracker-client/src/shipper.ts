import { Batcher, type BatcherEvent, type BatcherStats } from './batcher.js';
import { ciContext } from './ci-context.js';
import { batchSender, createLogTrackerClient } from './client.js';
import { createClock, type Clock } from './clock.js';
import type { LogEntry } from './entry.js';
import type { Level } from './entry.js';
import { parseLine } from './parse-line.js';
import type { Backoff } from './retry.js';

export interface ShipperOptions {
  url: string;
  key: string;
  projectId: number;
  /** Every entry's source. */
  source?: string;
  /** A plain line's level when no marker names one (default info). */
  level?: Level;
  /** Batches gzip-compressed (Content-Encoding: gzip); default true. */
  gzip?: boolean;
  flushMs?: number;
  maxEntries?: number;
  maxQueued?: number;
  concurrency?: number;
  backoff?: Backoff;
  requestTimeoutMs?: number;
  /** The environment the pipeline's context is read from. */
  env?: Record<string, string | undefined>;
  onEvent?: (event: BatcherEvent) => void;
}

/** Lines or entries in, batches out to one project: what the CLI and the pino transport share. */
export function createShipper(options: ShipperOptions) {
  const client = createLogTrackerClient({ url: options.url, key: options.key });
  const batcher = new Batcher({
    send: batchSender({ client, projectId: options.projectId, gzip: options.gzip ?? true, requestTimeoutMs: options.requestTimeoutMs ?? 30_000 }),
    ...(options.flushMs !== undefined ? { flushMs: options.flushMs } : {}),
    ...(options.maxEntries !== undefined ? { maxEntries: options.maxEntries } : {}),
    ...(options.maxQueued !== undefined ? { maxQueued: options.maxQueued } : {}),
    ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
    ...(options.backoff !== undefined ? { backoff: options.backoff } : {}),
    ...(options.onEvent !== undefined ? { onEvent: options.onEvent } : {}),
  });
  const clock: Clock = createClock();
  const ci = ciContext(options.env ?? {});
  const defaults = {
    ...(options.source !== undefined ? { source: options.source } : {}),
    ...(options.level !== undefined ? { level: options.level } : {}),
    ...(ci ? { context: { ci } } : {}),
  };
  return {
    batcher,
    clock,
    /** The pipeline's context, which every entry carries under `ci`. */
    ci,
    /** One line of output; a promise to await before reading more when the queue is full. */
    line(text: string): Promise<void> | undefined {
      const entry = parseLine(text, clock, defaults);
      return entry ? batcher.add(entry) : undefined;
    },
    entry(entry: LogEntry): Promise<void> | undefined {
      return batcher.add(entry);
    },
    close(timeoutMs: number): Promise<BatcherStats> {
      return batcher.close(timeoutMs);
    },
  };
}
export type Shipper = ReturnType<typeof createShipper>;
