/** The one table of error codes and the HTTP status each answers. */
export const errorStatus = {
  bad_request: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  route_not_found: 404,
  method_not_allowed: 405,
  not_acceptable: 406,
  request_timeout: 408,
  conflict: 409,
  gone: 410,
  length_required: 411,
  precondition_failed: 412,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  range_not_satisfiable: 416,
  expectation_failed: 417,
  validation_error: 422,
  rate_limited: 429,
  request_header_fields_too_large: 431,
  internal_error: 500,
  bad_gateway: 502,
  service_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof errorStatus;

export type FieldErrors = Record<string, string[]>;

/** How many failing fields a 422 lists, and how many messages each. */
export const MAX_LISTED_FIELDS = 100;
export const MAX_MESSAGES_PER_FIELD = 5;

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly errors?: FieldErrors;
  readonly headers?: Record<string, string>;
  /** Fields of the envelope beside `error`, `message` and `errors` (a 422's `error_count`). */
  readonly extra?: Record<string, string | number>;

  constructor(
    code: ErrorCode,
    message: string,
    options: {
      errors?: FieldErrors;
      headers?: Record<string, string>;
      extra?: Record<string, string | number>;
      cause?: unknown;
    } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.statusCode = errorStatus[code];
    this.errors = options.errors;
    this.headers = options.headers;
    this.extra = options.extra;
  }

  static notFound(what = 'Resource'): AppError {
    return new AppError('not_found', `${what} not found`);
  }

  /**
   * 422 naming each failing field. A body with thousands of bad entries would answer a list larger
   * than itself: the first MAX_LISTED_FIELDS fields are listed (MAX_MESSAGES_PER_FIELD messages
   * each) and `error_count` says how many fields failed.
   */
  static validation(errors: FieldErrors, message = 'The given data was invalid'): AppError {
    const fields = Object.keys(errors);
    if (fields.length <= MAX_LISTED_FIELDS && fields.every((f) => (errors[f]?.length ?? 0) <= MAX_MESSAGES_PER_FIELD)) {
      return new AppError('validation_error', message, { errors });
    }
    const listed: FieldErrors = {};
    for (const field of fields.slice(0, MAX_LISTED_FIELDS)) listed[field] = (errors[field] ?? []).slice(0, MAX_MESSAGES_PER_FIELD);
    const shown = fields.length > MAX_LISTED_FIELDS ? `; the first ${MAX_LISTED_FIELDS} are listed` : '';
    return new AppError('validation_error', `${message}: ${fields.length} fields failed${shown}`, {
      errors: listed,
      extra: { error_count: fields.length },
    });
  }
}

export function isAppError(value: unknown): value is AppError {
  return value instanceof AppError;
}
