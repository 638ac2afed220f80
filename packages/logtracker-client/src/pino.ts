import build from 'pino-abstract-transport';
import { microsOf, type Clock } from './clock.js';
import { storableMessage, storableSource, storableValue, type LogEntry } from './entry.js';
import { levelOf } from './levels.js';
import { createShipper } from './shipper.js';
import type { Backoff } from './retry.js';

export interface PinoTransportOptions {
  url: string;
  key: string;
  project: number;
  /** Every log's source; by default pino's `name` when the logger has one. */
  source?: string;
  /** Keeps pino's `pid` and `hostname` in each log's context (dropped by default). */
  keepProcessFields?: boolean;
  flushMs?: number;
  /**
   * On close, how long to keep trying to deliver what is left (default 5 s): pino's main thread
   * waits for its worker at exit, for 10 s at most.
   */
  flushTimeoutMs?: number;
  /** Batches gzip-compressed (Content-Encoding: gzip); default true. */
  gzip?: boolean;
  backoff?: Backoff;
}

const OWN_FIELDS = new Set(['level', 'msg', 'message', 'time']);
const PROCESS_FIELDS = new Set(['pid', 'hostname']);

/**
 * pino's log object as a log: pino's level (10/20 debug, 30 info, 40 warning, 50/60 error), `msg`
 * the message, `time` the timestamp (ties moved on by a microsecond, keeping their order), the other
 * fields the context; `pid` and `hostname` are dropped unless `keepProcessFields`.
 */
export function pinoEntry(record: Record<string, unknown>, clock: Clock, options: Pick<PinoTransportOptions, 'source' | 'keepProcessFields'> = {}): LogEntry {
  const text = record.msg ?? record.message;
  const micros = microsOf(record.time);
  const context: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record)) {
    if (OWN_FIELDS.has(key) || (!options.keepProcessFields && PROCESS_FIELDS.has(key))) continue;
    context[key] = value;
  }
  // A log without a message (logger.info({ order: 42 })) is shown by its fields.
  const message = typeof text === 'string' ? text : text !== undefined && text !== null ? String(text) : '';
  const entry: LogEntry = {
    level: levelOf(record.level) ?? 'info',
    message: storableMessage(message !== '' ? message : Object.keys(context).length > 0 ? JSON.stringify(context) : '(no message)'),
    timestamp: micros === undefined ? clock.now() : clock.at(micros),
  };
  const source = storableSource(options.source ?? (typeof record.name === 'string' ? record.name : undefined));
  if (source) entry.source = source;
  if (Object.keys(context).length > 0) entry.context = storableValue(context) as Record<string, unknown>;
  return entry;
}

/**
 * The pino transport: `pino.transport({ target: '@repo/logtracker-client/pino', options: { url,
 * key, project } })`. It runs in pino's worker thread, batches and retries as the CLI does, and
 * delivers what is left when the logger's stream is closed (within `flushTimeoutMs`).
 */
export default async function logTrackerTransport(options: PinoTransportOptions) {
  const projectId = Number(options.project);
  if (!options.url || !options.key || !Number.isSafeInteger(projectId) || projectId < 1) {
    throw new Error('the logtracker pino transport needs options { url, key, project } (project: a project id)');
  }
  const shipper = createShipper({
    url: options.url,
    key: options.key,
    projectId,
    ...(options.flushMs !== undefined ? { flushMs: options.flushMs } : {}),
    ...(options.gzip !== undefined ? { gzip: options.gzip } : {}),
    ...(options.backoff !== undefined ? { backoff: options.backoff } : {}),
  });
  const clock = shipper.clock;
  return build(
    async (source: AsyncIterable<Record<string, unknown>>) => {
      for await (const record of source) {
        const full = shipper.entry(pinoEntry(record, clock, options));
        if (full) await full;
      }
    },
    {
      async close() {
        const stats = await shipper.close(options.flushTimeoutMs ?? 5000);
        if (stats.lost > 0) process.stderr.write(`logtracker pino transport: ${stats.lost} of ${stats.lines} logs lost (not delivered)\n`);
      },
    },
  );
}
