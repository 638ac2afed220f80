import { z } from 'zod';

/**
 * A positive integer id in a path or query string, written in plain decimal: `Number()` alone
 * would also read `1e3`, `0x10` or ` 5` as ids.
 */
function decimalId(max: number) {
  const schema = z
    .string()
    .regex(/^[1-9][0-9]{0,15}$/, 'Must be a positive integer')
    .transform(Number)
    .pipe(z.number().int().max(max, `Must be at most ${max}`));
  decimalIds.add(schema, { maximum: max });
  return schema;
}

/**
 * The decimal id schemas and their largest value. A path or query string is text, so they read a
 * string; the OpenAPI document shows them as the integers they stand for (the same ids bodies carry).
 */
export const decimalIds = z.registry<{ maximum: number }>();

/** An id of an `integer` column. */
export const id = decimalId(2_147_483_647);

/** An id of a `bigint` column (high-volume tables). */
export const bigId = decimalId(Number.MAX_SAFE_INTEGER);

/** Half of a UTF-16 surrogate pair without its other half (JSON can carry one: `"\ud800"`). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const UNSTORABLE_CHARACTERS = new RegExp(`\\u0000|${LONE_SURROGATE.source}`, 'g');

/**
 * Whether PostgreSQL can store the string: its text and jsonb hold no NUL character, and a lone
 * surrogate has no UTF-8 form. Such input is refused as invalid rather than failing on insert.
 */
export const storableText = (value: string) => !value.includes('\u0000') && !LONE_SURROGATE.test(value);
export const UNSTORABLE_TEXT_MESSAGE = 'Must not contain NUL characters or unpaired UTF-16 surrogates';

/** The string with each character PostgreSQL cannot store replaced by U+FFFD: fit to show or log. */
export const replaceUnstorable = (value: string) => value.replace(UNSTORABLE_CHARACTERS, '\uFFFD');

function isPlainObject(value: object): boolean {
  const prototype = Object.getPrototypeOf(value) as object | null;
  // Query strings and params are parsed into objects without Object's prototype (or with an empty one of their own).
  return prototype === null || prototype === Object.prototype || Object.getPrototypeOf(prototype) === null;
}

/** Past this depth `hasUnstorableText` hands over to the iterative walk, which no nesting can overflow. */
const RECURSION_DEPTH = 32;

/**
 * Whether a parsed JSON value holds a string, or an object key, that PostgreSQL could not store:
 * `unstorableTextPaths(value).length > 0`, without building paths. The check every request pays,
 * where a finding (rare) then asks `unstorableTextPaths` where.
 */
export function hasUnstorableText(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return !storableText(value);
  if (value === null || typeof value !== 'object') return false;
  if (depth >= RECURSION_DEPTH) return unstorableTextPaths(value, 1).length > 0;
  if (Array.isArray(value)) {
    for (const item of value as unknown[]) if (hasUnstorableText(item, depth + 1)) return true;
    return false;
  }
  if (!isPlainObject(value)) return false;
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    if (!storableText(key) || hasUnstorableText((value as Record<string, unknown>)[key], depth + 1)) return true;
  }
  return false;
}

/**
 * The dotted paths (`logs.3.context.user`) of every string, and every object key, in a parsed
 * JSON value that PostgreSQL could not store; at most `limit` of them. Iterative, so a deeply
 * nested value cannot overflow the stack.
 */
export function unstorableTextPaths(value: unknown, limit = 100): string[] {
  const found: string[] = [];
  const pending: { value: unknown; path: string }[] = [{ value, path: '' }];
  const join = (path: string, key: string | number) => (path ? `${path}.${key}` : String(key));
  for (let item = pending.pop(); item && found.length < limit; item = pending.pop()) {
    const { value: current, path } = item;
    if (typeof current === 'string') {
      if (!storableText(current)) found.push(path);
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) pending.push({ value: current[i], path: join(path, i) });
    } else if (current !== null && typeof current === 'object' && isPlainObject(current)) {
      // Plain objects only: a parser's own object (a batch kept as bytes, a stream) is its route's to check.
      const entries = Object.entries(current);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, inner] = entries[i] as [string, unknown];
        // A bad key is named by its replacement-character form, which can be shown and logged.
        if (!storableText(key)) found.push(join(path, replaceUnstorable(key)));
        else pending.push({ value: inner, path: join(path, key) });
      }
    }
  }
  return found;
}

/**
 * A latitude or longitude in degrees, rounded to 7 decimals (about a centimetre): a value such as
 * 4.4e-181 would otherwise underflow the distance arithmetic in PostgreSQL (an error, not a 0).
 */
const degrees = (bound: number, coerce: boolean) =>
  (coerce ? z.coerce.number() : z.number())
    .min(-bound)
    .max(bound)
    .transform((value) => Math.round(value * 1e7) / 1e7 + 0);
export const latitude = degrees(90, false);
export const longitude = degrees(180, false);
/** The same, from a query string. */
export const latitudeQuery = degrees(90, true);
export const longitudeQuery = degrees(180, true);

export const idParams = z.object({ id });

/** An ISO 8601 instant with an offset (`2026-01-02T03:04:05Z`), parsed to a Date. */
export const isoDateTime = z.iso.datetime({ offset: true }).transform((v) => new Date(v));

/**
 * An instant in a response: a UTC ISO 8601 string. Responses are plain data (no transforms),
 * because the serialiser encodes with zod and a one-way transform cannot be encoded.
 */
export const timestamp = z.iso.datetime();

const twoDigits = (n: number) => (n < 10 ? `0${n}` : `${n}`);

/**
 * The response form of an instant: exactly `toISOString()`'s text, written from the date's UTC
 * fields. Every timestamp of every response goes through here, and V8's `toISOString` costs about
 * 0.7 µs a call against 0.25 µs this way (a page of twenty rows has forty of them). Years outside
 * 0000–9999, which ISO writes with a sign and six digits, and invalid dates (a RangeError) are
 * left to `toISOString` itself.
 */
export function iso(date: Date): string;
export function iso(date: Date | null): string | null;
export function iso(date: Date | null): string | null {
  if (!date) return null;
  const year = date.getUTCFullYear();
  if (!(year >= 0 && year <= 9999)) return date.toISOString();
  const ms = date.getUTCMilliseconds();
  return (
    `${year >= 1000 ? year : String(year).padStart(4, '0')}-${twoDigits(date.getUTCMonth() + 1)}-${twoDigits(date.getUTCDate())}` +
    `T${twoDigits(date.getUTCHours())}:${twoDigits(date.getUTCMinutes())}:${twoDigits(date.getUTCSeconds())}` +
    `.${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z`
  );
}

/** Money in integer minor units with its currency; never a float. */
export const money = z.object({
  amount_cents: z.number().int(),
  currency: z.string().length(3).default('EUR'),
});

export function paginationQuery(opts: { defaultPerPage: number; maxPerPage: number }) {
  return z.object({
    page: z.coerce.number().int().min(1).max(1_000_000).default(1),
    per_page: z.coerce.number().int().min(1).max(opts.maxPerPage).default(opts.defaultPerPage),
  });
}

export const paginationMeta = z.object({
  current_page: z.number().int(),
  per_page: z.number().int(),
  total: z.number().int(),
  last_page: z.number().int(),
});

/** `{ data, message? }` around a resource. */
export function envelope<T extends z.ZodType>(data: T) {
  return z.object({ data, message: z.string().optional() });
}

/** `{ data: [...], meta }` around a page of resources. */
export function paginatedEnvelope<T extends z.ZodType, M extends z.ZodType = typeof paginationMeta>(
  item: T,
  meta?: M,
) {
  return z.object({ data: z.array(item), meta: meta ?? paginationMeta, message: z.string().optional() });
}

/** `{ message }` for actions that return nothing else (deletion, logout). */
export const messageEnvelope = z.object({ message: z.string(), data: z.null().optional() });

// One component in the OpenAPI documents (`ErrorEnvelope`) rather than a copy under every response.
export const errorEnvelope = z
  .object({
    error: z.string(),
    message: z.string(),
    errors: z.record(z.string(), z.array(z.string())).optional(),
    /** How many fields failed, when `errors` lists only the first of them. */
    error_count: z.number().int().optional(),
    /** A 409 of a state machine: the state the resource is in, which the move does not leave from. */
    current_status: z.string().optional(),
    request_id: z.string().optional(),
  })
  .meta({ id: 'ErrorEnvelope' });

/** What each status a route may answer means: the responses' descriptions in the OpenAPI documents. */
export const responseDescriptions: Record<number, string> = {
  101: 'Switching protocols: the WebSocket is open',
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No content',
  400: 'Bad request: a body that is not JSON or nests deeper than 64 levels, a wrong content type, or a request this route cannot take',
  401: 'Unauthenticated: the credentials are missing, invalid or expired',
  403: 'Forbidden: the caller may not do this',
  404: 'Not found',
  405: 'Method not allowed',
  409: 'Conflict: the resource is not in a state that allows this; a refused state move names its `current_status`',
  413: 'Payload too large',
  414: 'URI too long: a path parameter is over 100 characters',
  415: 'Unsupported media type',
  422: 'Validation failed: `errors` names each failing field (at most 100; `error_count` gives how many failed)',
  429: 'Too many requests: retry after the `retry-after` header\'s seconds',
  502: 'Bad gateway: an upstream service failed',
  503: 'Service unavailable',
};

/** The error responses every route may answer, for the OpenAPI document. */
export function errorResponses<const C extends readonly (400 | 401 | 403 | 404 | 409 | 413 | 415 | 422 | 429 | 502 | 503)[]>(
  ...codes: C
) {
  return Object.fromEntries(codes.map((c) => [c, errorEnvelope])) as { [K in C[number]]: typeof errorEnvelope };
}

/**
 * `POST /auth/logout` as both services document it: the bearer's session ends at once, so its
 * token stops working even before it expires.
 */
export const logoutSchema = {
  operationId: 'logout',
  tags: ['auth'],
  summary: 'End the current session; its token stops working at once',
  security: [{ bearerAuth: [] }],
  response: { 200: messageEnvelope, ...errorResponses(401, 429) },
};

/** Trims, lower-cases and checks an e-mail address. */
export const email = z
  .string()
  .trim()
  .toLowerCase()
  .max(254)
  .pipe(z.email({ message: 'Must be a valid e-mail address' }));

/** A password with its confirmation; the refinement reports on `password_confirmation`. */
export const passwordField = z.string().min(8, 'Must be at least 8 characters').max(256);
