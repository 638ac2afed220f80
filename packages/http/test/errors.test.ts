import { describe, expect, it } from 'vitest';
import { AppError, MAX_LISTED_FIELDS, MAX_MESSAGES_PER_FIELD, errorStatus, isAppError } from '../src/index.js';

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

describe('AppError.validation', () => {
  it('lists every field of a small failure as given', () => {
    const error = AppError.validation({ name: ['Required'] });
    expect(error.errors).toEqual({ name: ['Required'] });
    expect(error.extra).toBeUndefined();
  });

  it('caps a large failure and gives the count', () => {
    const errors: Record<string, string[]> = {};
    for (let i = 0; i < 20_000; i++) errors[`logs.${i}.level`] = ['Invalid option', 'a', 'b', 'c', 'd', 'e', 'f'];
    const error = AppError.validation(errors);
    expect(Object.keys(error.errors ?? {})).toHaveLength(MAX_LISTED_FIELDS);
    expect(error.errors?.['logs.0.level']).toHaveLength(MAX_MESSAGES_PER_FIELD);
    expect(error.extra).toEqual({ error_count: 20_000 });
    expect(error.message).toContain('20000 fields failed');
  });
});
