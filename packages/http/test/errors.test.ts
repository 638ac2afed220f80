import { describe, expect, it } from 'vitest';
import { AppError, errorStatus, isAppError } from '../src/index.js';

describe('AppError', () => {
  it('takes its status from the one table of codes', () => {
    const expected = {
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
    } as const;
    for (const [code, status] of Object.entries(expected)) {
      expect(errorStatus[code as keyof typeof expected]).toBe(status);
      expect(new AppError(code as keyof typeof expected, 'x').statusCode).toBe(status);
    }
  });

  it('carries its code, message, field errors, headers and cause', () => {
    const cause = new Error('root');
    const error = new AppError('rate_limited', 'Slow down', { headers: { 'retry-after': '30' }, cause });
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('AppError');
    expect(error.code).toBe('rate_limited');
    expect(error.message).toBe('Slow down');
    expect(error.headers).toEqual({ 'retry-after': '30' });
    expect(error.cause).toBe(cause);
    expect(error.errors).toBeUndefined();
  });

  it('builds a not_found for a named resource', () => {
    const error = AppError.notFound('Invoice');
    expect(error.statusCode).toBe(404);
    expect(error.code).toBe('not_found');
    expect(error.message).toBe('Invoice not found');
    expect(AppError.notFound().message).toBe('Resource not found');
  });

  it('builds a validation_error with field errors', () => {
    const error = AppError.validation({ 'logs.3.level': ['Invalid option'] });
    expect(error.statusCode).toBe(422);
    expect(error.errors).toEqual({ 'logs.3.level': ['Invalid option'] });
    expect(error.message).toBe('The given data was invalid');
    expect(AppError.validation({}, 'Nope').message).toBe('Nope');
  });

  it('is recognised by isAppError and nothing else is', () => {
    expect(isAppError(new AppError('conflict', 'x'))).toBe(true);
    expect(isAppError(new Error('x'))).toBe(false);
    expect(isAppError({ code: 'conflict', statusCode: 409 })).toBe(false);
    expect(isAppError(undefined)).toBe(false);
  });
});
