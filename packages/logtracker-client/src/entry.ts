/** The four levels the log tracker stores. */
export const LEVELS = ['error', 'warning', 'info', 'debug'] as const;
export type Level = (typeof LEVELS)[number];

/** One log as the batch route takes it. */
export interface LogEntry {
  level: Level;
  message: string;
  /** ISO 8601 with a zone, to the microsecond at most. */
  timestamp: string;
  source?: string;
  context?: Record<string, unknown>;
}

/** The server's limits on one entry's fields (its batch schema). */
export const MAX_MESSAGE_LENGTH = 65_536;
export const MAX_SOURCE_LENGTH = 255;
/** Deeper contexts are refused by the server; what lies below is kept as JSON text. */
const MAX_CONTEXT_DEPTH = 30;

/**
 * Text the server can store: PostgreSQL's text and jsonb hold no NUL and no unpaired surrogate,
 * and one such character in a batch makes the server refuse the whole batch (422).
 */
export function storableText(text: string): string {
  return UNSTORABLE.test(text) ? text.replace(UNSTORABLE_ALL, '\uFFFD') : text;
}
const UNSTORABLE_SOURCE = '\\u0000|[\\uD800-\\uDBFF](?![\\uDC00-\\uDFFF])|(?<![\\uD800-\\uDBFF])[\\uDC00-\\uDFFF]';
const UNSTORABLE = new RegExp(UNSTORABLE_SOURCE);
const UNSTORABLE_ALL = new RegExp(UNSTORABLE_SOURCE, 'g');

/** `text` cut to `max` UTF-16 units, never in the middle of a surrogate pair, marked with an ellipsis. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}…`;
}

/** A message the server takes: storable, non-empty, within its length. */
export function storableMessage(text: string): string {
  return truncate(storableText(text), MAX_MESSAGE_LENGTH);
}

/** A source the server takes, or undefined when nothing is left of it once trimmed. */
export function storableSource(source: string | undefined): string | undefined {
  const trimmed = source === undefined ? '' : truncate(storableText(source), MAX_SOURCE_LENGTH).trim();
  return trimmed === '' ? undefined : trimmed;
}

/**
 * A JSON value the server stores as sent: strings and keys made storable, and whatever lies deeper
 * than it accepts kept as its JSON text.
 */
export function storableValue(value: unknown, depth = 1): unknown {
  if (typeof value === 'string') return storableText(value);
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_CONTEXT_DEPTH) return storableText(JSON.stringify(value));
  if (Array.isArray(value)) return value.map((inner) => storableValue(inner, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) out[storableText(key)] = storableValue(inner, depth + 1);
  return out;
}
