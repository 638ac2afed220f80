import { createHash } from 'node:crypto';

/**
 * Properties of database errors that carry what was sent: Drizzle's `query`/`params`, postgres.js'
 * `query`/`parameters`/`args`/`types`, and the server's `detail`/`where`/`internal_query`, which
 * quote the row or statement. A failed batch insert would otherwise log the whole batch.
 */
const WITHHELD = new Set(['query', 'params', 'parameters', 'args', 'types', 'detail', 'where', 'internal_query', 'internalQuery']);

const MAX_MESSAGE = 300;
const MAX_CAUSES = 3;

/**
 * A statement named without its values: its opening words and a hash of its text, enough to tell
 * which statement failed and to find every failure of the same one.
 */
export function statementName(query: string): string {
  const opening = query.replace(/\s+/g, ' ').trim().slice(0, 60);
  return `${opening} #${createHash('sha1').update(query).digest('hex').slice(0, 10)}`;
}

function safeMessage(error: Error & { query?: unknown }): string {
  // Drizzle words a failed query as "Failed query: <sql>\nparams: <every parameter>".
  if (error.message.startsWith('Failed query:')) return 'Failed query';
  return error.message.length > MAX_MESSAGE ? `${error.message.slice(0, MAX_MESSAGE)}…` : error.message;
}

/**
 * pino's error serializer, without what a request sent: the log keeps the error's type, code,
 * server routine, table and constraint, and the statement's name, never its parameters.
 */
export function serializeError(value: unknown, depth = 0): unknown {
  if (!(value instanceof Error)) return value;
  const error = value as Error & Record<string, unknown>;
  const message = safeMessage(error);
  const out: Record<string, unknown> = {
    type: error.name,
    message,
    stack: error.stack?.replace(error.message, message),
  };
  for (const [key, inner] of Object.entries(error)) {
    if (WITHHELD.has(key) || key === 'cause' || key in out) continue;
    out[key] = typeof inner === 'string' && inner.length > MAX_MESSAGE ? `${inner.slice(0, MAX_MESSAGE)}…` : inner;
  }
  if (typeof error.query === 'string') out.statement = statementName(error.query);
  if (error.cause !== undefined && depth < MAX_CAUSES) out.cause = serializeError(error.cause, depth + 1);
  return out;
}
