import type { Clock } from './clock.js';
import { microsOf } from './clock.js';
import { storableMessage, storableSource, storableValue, type Level, type LogEntry } from './entry.js';
import { levelOf, markedLevel, stripAnsi } from './levels.js';

export interface LineDefaults {
  /** The entries' source (`--source`). */
  source?: string;
  /** Context every entry carries (the pipeline's, under `ci`). */
  context?: Record<string, unknown>;
  /** A plain line's level when no marker names one. */
  level?: Level;
}

/** The fields of a structured line that become the entry's own; the rest go to its context. */
const OWN_FIELDS = new Set(['level', 'message', 'msg', 'time', 'timestamp']);

/**
 * One line of output as a log: a JSON object keeps its fields (`level`, `message` or `msg`, `time`
 * or `timestamp`; the rest in `context`), any other line is a plain message whose level its markers
 * give. Colour codes are stripped; an empty line is no log (undefined).
 */
export function parseLine(raw: string, clock: Clock, defaults: LineDefaults = {}): LogEntry | undefined {
  const line = stripAnsi(raw.endsWith('\r') ? raw.slice(0, -1) : raw);
  if (line.trim() === '') return undefined;
  const fields = line.trimStart().startsWith('{') ? jsonObject(line) : undefined;
  return fields ? structured(fields, line, clock, defaults) : plain(line, clock, defaults);
}

function plain(line: string, clock: Clock, defaults: LineDefaults): LogEntry {
  return entry(markedLevel(line) ?? defaults.level ?? 'info', line, clock.now(), defaults, undefined);
}

function structured(fields: Record<string, unknown>, line: string, clock: Clock, defaults: LineDefaults): LogEntry {
  const text = fields.message ?? fields.msg;
  const message = typeof text === 'string' && text.trim() !== '' ? stripAnsi(text) : text !== undefined && text !== null && typeof text !== 'object' ? String(text) : line;
  const micros = microsOf(fields.time ?? fields.timestamp);
  const own: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) if (!OWN_FIELDS.has(key)) own[key] = value;
  // A time the server could not store stays in the context, where it can still be read.
  if (micros === undefined && (fields.time ?? fields.timestamp) !== undefined) {
    if ('time' in fields) own.time = fields.time;
    if ('timestamp' in fields) own.timestamp = fields.timestamp;
  }
  const level = levelOf(fields.level) ?? markedLevel(message) ?? defaults.level ?? 'info';
  return entry(level, message, micros === undefined ? clock.now() : clock.at(micros), defaults, own);
}

function entry(level: Level, message: string, timestamp: string, defaults: LineDefaults, own: Record<string, unknown> | undefined): LogEntry {
  const log: LogEntry = { level, message: storableMessage(message), timestamp };
  const source = sourceOf(defaults.source);
  if (source) log.source = source;
  const hasOwn = own !== undefined && Object.keys(own).length > 0;
  if (hasOwn || defaults.context) {
    log.context = (hasOwn ? storableValue({ ...own, ...defaults.context }) : defaults.context) as Record<string, unknown>;
  }
  return log;
}

let lastSource: { given: string | undefined; stored: string | undefined } = { given: undefined, stored: undefined };
/** storableSource, made once for the run's one source rather than once a line. */
function sourceOf(given: string | undefined): string | undefined {
  if (given !== lastSource.given) lastSource = { given, stored: storableSource(given) };
  return lastSource.stored;
}

function jsonObject(line: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(line);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
