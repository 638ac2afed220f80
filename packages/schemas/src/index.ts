import { z } from 'zod';

/**
 * A positive integer id in a path or query string, written in plain decimal: `Number()` alone
 * would also read `1e3`, `0x10` or ` 5` as ids.
 */
function decimalId(max: number) {
  return z
    .string()
    .regex(/^[1-9][0-9]{0,15}$/, 'Must be a positive integer')
    .transform(Number)
    .pipe(z.number().int().max(max, `Must be at most ${max}`));
}

/** An id of an `integer` column. */
export const id = decimalId(2_147_483_647);

/** An id of a `bigint` column (high-volume tables). */
export const bigId = decimalId(Number.MAX_SAFE_INTEGER);

/** PostgreSQL text cannot hold NUL characters; reject them as input rather than fail on insert. */
export const noNul = (value: string) => !value.includes('\u0000');
export const NO_NUL_MESSAGE = 'Must not contain NUL characters';

export const idParams = z.object({ id });

/** An ISO 8601 instant with an offset (`2026-01-02T03:04:05Z`), parsed to a Date. */
export const isoDateTime = z.iso.datetime({ offset: true }).transform((v) => new Date(v));

/**
 * An instant in a response: a UTC ISO 8601 string. Responses are plain data (no transforms),
 * because the serialiser encodes with zod and a one-way transform cannot be encoded.
 */
export const timestamp = z.iso.datetime();

/** The response form of an instant. */
export function iso(date: Date): string;
export function iso(date: Date | null): string | null;
export function iso(date: Date | null): string | null {
  return date ? date.toISOString() : null;
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

export const errorEnvelope = z.object({
  error: z.string(),
  message: z.string(),
  errors: z.record(z.string(), z.array(z.string())).optional(),
  request_id: z.string().optional(),
});

/** The error responses every route may answer, for the OpenAPI document. */
export function errorResponses<const C extends readonly (400 | 401 | 403 | 404 | 409 | 413 | 422 | 429 | 502 | 503)[]>(
  ...codes: C
) {
  return Object.fromEntries(codes.map((c) => [c, errorEnvelope])) as { [K in C[number]]: typeof errorEnvelope };
}

/** Trims, lower-cases and checks an e-mail address. */
export const email = z
  .string()
  .trim()
  .toLowerCase()
  .max(254)
  .pipe(z.email({ message: 'Must be a valid e-mail address' }));

/** A password with its confirmation; the refinement reports on `password_confirmation`. */
export const passwordField = z.string().min(8, 'Must be at least 8 characters').max(256);
