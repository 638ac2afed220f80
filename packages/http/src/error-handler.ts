import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { AppError, errorStatus, type ErrorCode, type FieldErrors } from './errors.js';

const contextPrefix: Record<string, string> = { querystring: '', params: '', body: '', headers: '' };

/** Turns validation issues into `{ "logs.3.level": ["…"] }`, the dotted paths clients show beside fields. */
function fieldErrors(error: FastifyError): FieldErrors {
  const errors: FieldErrors = {};
  for (const issue of error.validation ?? []) {
    const path = issue.instancePath.replace(/^\//, '').split('/').filter(Boolean).join('.');
    const key = (contextPrefix[error.validationContext ?? ''] ?? '') + (path || (error.validationContext ?? 'body'));
    (errors[key] ??= []).push(issue.message ?? 'Invalid value');
  }
  return errors;
}

/** Maps Fastify's own errors (parsers, limits) onto the envelope's codes. */
function fromFastifyError(error: FastifyError): AppError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('payload_too_large', 'The request body is too large');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('bad_request', 'Unsupported content type; send application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('bad_request', 'The request body is empty but its content type is application/json');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError('bad_request', 'The request body is not valid JSON');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('bad_request', 'The Content-Length header does not match the body');
    default:
      break;
  }
  if (error instanceof SyntaxError || (error.statusCode === 400 && /JSON/i.test(error.message))) {
    return new AppError('bad_request', 'The request body is not valid JSON');
  }
  if (error.statusCode === 413) return new AppError('payload_too_large', 'The request body is too large');
  if (error.statusCode === 415) return new AppError('bad_request', 'Unsupported content type; send application/json');
  return undefined;
}

function send(reply: FastifyReply, request: FastifyRequest, error: AppError) {
  if (error.headers) reply.headers(error.headers);
  const body: Record<string, unknown> = { error: error.code, message: error.message };
  if (error.errors) body.errors = error.errors;
  if (error.extra) Object.assign(body, error.extra);
  if (error.statusCode >= 500) body.request_id = request.id;
  return reply.status(error.statusCode).type('application/json; charset=utf-8').send(body);
}

/** A client error the table has no code for: its status, and its name as the code. */
function sendStatus(reply: FastifyReply, request: FastifyRequest, status: number, message: string) {
  const code = (STATUS_CODES[status] ?? 'client_error').toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_|_$/g, '');
  return reply.status(status).type('application/json; charset=utf-8').send({ error: code, message });
}

/** The table's code for a 4xx status (its first, for 404), or undefined for a status it lacks. */
function codeOfStatus(status: number): ErrorCode | undefined {
  return (Object.keys(errorStatus) as ErrorCode[]).find((code) => errorStatus[code] === status);
}

/** How long a client is asked to wait when an error does not say (Retry-After, seconds). */
const DEFAULT_RETRY_AFTER = 1;

/**
 * The error, or one it was caused by, that declares 503 (`statusCode`, as Fastify's errors do):
 * a dependency that cannot be reached, such as @repo/db's DatabaseUnavailableError. An outage is
 * retried by the client after Retry-After, where a 500 says the request itself failed.
 */
function unavailableCause(error: unknown): { retryAfter?: unknown } | undefined {
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    if ((e as { statusCode?: unknown }).statusCode === 503) return e as { retryAfter?: unknown };
  }
  return undefined;
}

function sendUnavailable(reply: FastifyReply, request: FastifyRequest, error: unknown, cause: { retryAfter?: unknown }) {
  const seconds = typeof cause.retryAfter === 'number' && cause.retryAfter >= 1 ? Math.ceil(cause.retryAfter) : DEFAULT_RETRY_AFTER;
  // A warning, not an error: the outage is logged once per request, its cause's code kept and its
  // statement's parameters withheld (serializeError).
  request.log.warn({ err: error }, 'service unavailable');
  return send(
    reply,
    request,
    new AppError('service_unavailable', 'The service is temporarily unavailable; retry after the Retry-After delay', {
      headers: { 'retry-after': String(seconds) },
    }),
  );
}

export function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  // An AppError the code raised as 503 keeps its own message; one of its 500s caused by an outage,
  // and any other error caused by one, answers 503.
  const outage = error instanceof AppError ? (error.statusCode === 500 ? unavailableCause(error.cause) : undefined) : unavailableCause(error);
  if (outage) return sendUnavailable(reply, request, error, outage);
  if (error instanceof AppError) {
    if (error.statusCode >= 500) request.log.error({ err: error.cause ?? error }, error.message);
    return send(reply, request, error);
  }
  if (hasZodFastifySchemaValidationErrors(error)) {
    return send(reply, request, AppError.validation(fieldErrors(error)));
  }
  if (error.validation) {
    return send(reply, request, AppError.validation(fieldErrors(error)));
  }
  const mapped = fromFastifyError(error);
  if (mapped) return send(reply, request, mapped);
  if (error.statusCode === 429) {
    return send(reply, request, new AppError('rate_limited', 'Too many requests, retry later'));
  }
  // Anything else is a bug or an outage: log everything, answer nothing internal.
  if (isResponseSerializationError(error)) {
    request.log.error({ err: error, issues: error.cause }, 'response does not match its schema');
  } else {
    request.log.error({ err: error }, 'unhandled error');
  }
  // A 4xx from a plugin keeps its status, with the table's code for it, or a code made of the
  // status's own name for one the table lacks (418 → im_a_teapot).
  const status = error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
  if (status < 500) {
    const code = codeOfStatus(status);
    if (code) return send(reply, request, new AppError(code, error.message));
    return sendStatus(reply, request, status, error.message);
  }
  return send(reply, request, new AppError('internal_error', 'An unexpected error occurred'));
}

/**
 * Errors Fastify raises before a route is found (Fastify's `frameworkErrors` option): a path
 * parameter longer than the router's limit (414), a URL that does not decode (400). Without this
 * they are answered in Fastify's own body, outside the envelope.
 */
export function handleFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  reply.header('x-request-id', request.id);
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    return send(reply, request, new AppError('uri_too_long', 'A path parameter is too long'));
  }
  if (error.code === 'FST_ERR_BAD_URL') return send(reply, request, new AppError('bad_request', 'The URL is not valid'));
  return handleError(error, request, reply);
}

export const errorHandlerPlugin = fp(
  async (app: FastifyInstance) => {
    app.setErrorHandler(handleError);
    app.setNotFoundHandler((request, reply) =>
      send(reply, request, new AppError('route_not_found', `Route ${request.method} ${request.url.split('?')[0]} not found`)),
    );
  },
  { name: 'error-handler' },
);
