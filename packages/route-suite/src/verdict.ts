import type { SuiteOperation } from './openapi.js';

/**
 * Statuses any operation may answer though it does not list them, because the shared foundation
 * answers them before the route's own code runs: 400 (a body or URL that does not parse), 404 (a
 * hostile path value the router resolves to no route), 415 (content type). Every other status must
 * be in the operation's own `responses`: 401, 403 and 422, and 413 (body limit), 414 (path
 * parameter over the router's limit) and 429 (rate limit), which @repo/http's documents list on
 * every operation that can answer them.
 */
export const SHARED_STATUSES: readonly number[] = [400, 404, 415];

export function allowedStatuses(op: SuiteOperation): Set<number> {
  return new Set([...op.responses, ...SHARED_STATUSES]);
}

export interface Exchange {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string | Buffer;
  status: number;
  responseHeaders: Record<string, unknown>;
  body: string;
}

/**
 * The app's one table of error codes and the status each answers (`errorStatus` of packages/http).
 * With it an envelope's `error` must be a code of the table answering the response's status;
 * without it, a snake_case code.
 */
export type ErrorTable = Readonly<Record<string, number>>;

/**
 * What is wrong with an answer that is not a 2xx: anything but the JSON envelope, a string
 * `error` (a code of the error table, matching the status) and a string `message`. Fastify's own
 * error bodies (`{ error: 'Bad Request', code, statusCode }`) fail on their `error`.
 */
export function envelopeProblems(exchange: Exchange, table?: ErrorTable): string[] {
  if (exchange.status >= 200 && exchange.status < 300) return [];
  const type = String(exchange.responseHeaders['content-type'] ?? '');
  if (!type.startsWith('application/json')) return [`a ${exchange.status} answered as ${type || 'no content type'}, not the JSON envelope`];
  let parsed: unknown;
  try {
    parsed = JSON.parse(exchange.body);
  } catch {
    return [`a ${exchange.status} whose body is not JSON`];
  }
  const envelope = parsed as { error?: unknown; message?: unknown } | null;
  const problems: string[] = [];
  if (!envelope || typeof envelope !== 'object' || Array.isArray(envelope)) return [`a ${exchange.status} whose body is not an object`];
  if (typeof envelope.error !== 'string') problems.push(`a ${exchange.status} without a string \`error\``);
  else if (table && !Object.hasOwn(table, envelope.error)) problems.push(`a ${exchange.status} whose error ${JSON.stringify(envelope.error)} is not a code of the error table`);
  else if (table && table[envelope.error] !== exchange.status) {
    problems.push(`a ${exchange.status} whose error ${envelope.error} answers ${table[envelope.error]} in the error table`);
  } else if (!table && !/^[a-z][a-z0-9_]*$/.test(envelope.error)) problems.push(`a ${exchange.status} whose error ${JSON.stringify(envelope.error)} is not a code`);
  if (typeof envelope.message !== 'string') problems.push(`a ${exchange.status} without a string \`message\``);
  return problems;
}

/** The checks every answer to a hostile request must pass: no 5xx, a documented status, the envelope. */
export function hostileProblems(op: SuiteOperation, exchange: Exchange, table?: ErrorTable): string[] {
  const allowed = allowedStatuses(op);
  const problems: string[] = [];
  if (exchange.status >= 500) problems.push(`a server error (${exchange.status})`);
  else if (!allowed.has(exchange.status)) {
    problems.push(`status ${exchange.status} is not documented (documented: ${[...op.responses].join(', ')}; shared: ${SHARED_STATUSES.join(', ')})`);
  }
  return [...problems, ...envelopeProblems(exchange, table)];
}

const EXCERPT = 400;

function excerpt(value: string | Buffer | undefined): string {
  if (value === undefined) return '(none)';
  const text = typeof value === 'string' ? value : `<${value.length} bytes> ${value.toString('latin1')}`;
  const shown = JSON.stringify(text.length > EXCERPT ? text.slice(0, EXCERPT) : text);
  return text.length > EXCERPT ? `${shown}… (${text.length} characters)` : shown;
}

/** The request and its answer, printable: enough to replay it by hand (the bearer token is not shown). */
export function describeExchange(exchange: Exchange): string {
  const headers = Object.fromEntries(
    Object.entries(exchange.headers).map(([k, v]) => [k, /^(authorization|x-ingest-key)$/i.test(k) ? `${v.slice(0, 14)}…` : v]),
  );
  const url = exchange.url.length > EXCERPT ? `${exchange.url.slice(0, EXCERPT)}… (${exchange.url.length} characters)` : exchange.url;
  return [
    `  request:  ${exchange.method} ${url}`,
    `  headers:  ${JSON.stringify(headers)}`,
    `  payload:  ${excerpt(exchange.payload)}`,
    `  response: ${exchange.status} ${excerpt(exchange.body)}`,
  ].join('\n');
}
