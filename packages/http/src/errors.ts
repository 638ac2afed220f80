/** The one table of error codes and the HTTP status each answers. */
export const errorStatus = {
  bad_request: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  route_not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  validation_error: 422,
  rate_limited: 429,
  internal_error: 500,
  bad_gateway: 502,
  service_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof errorStatus;

export type FieldErrors = Record<string, string[]>;

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly errors?: FieldErrors;
  readonly headers?: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    options: { errors?: FieldErrors; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.statusCode = errorStatus[code];
    this.errors = options.errors;
    this.headers = options.headers;
  }

  static notFound(what = 'Resource'): AppError {
    return new AppError('not_found', `${what} not found`);
  }

  static validation(errors: FieldErrors, message = 'The given data was invalid'): AppError {
    return new AppError('validation_error', message, { errors });
  }
}

export function isAppError(value: unknown): value is AppError {
  return value instanceof AppError;
}
