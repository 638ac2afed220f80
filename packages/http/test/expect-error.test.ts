import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, expectError } from '../src/expect-error.js';
import { AppError, type AppInstance } from '../src/index.js';
import { buildApp } from './helpers.js';

describe('expectError', () => {
  let app: AppInstance;
  beforeAll(async () => {
    app = await buildApp();
    app.get('/taken', async () => {
      throw new AppError('conflict', 'Already taken', { errors: { email: ['The email has already been taken'] } });
    });
    app.get('/fine', async () => ({ ok: true }));
    await app.ready();
  });
  afterAll(() => app?.close());

  it('answers the envelope of a matching error', async () => {
    const body = expectError(await app.inject({ method: 'GET', url: '/taken' }), 409, 'conflict');
    expect(body).toEqual({ error: 'conflict', message: 'Already taken', errors: { email: ['The email has already been taken'] } });
  });

  it('fails on another status, another code, or a success', async () => {
    const taken = await app.inject({ method: 'GET', url: '/taken' });
    expect(() => expectError(taken, 400, 'conflict')).toThrow(/409/);
    expect(() => expectError(taken, 409, 'bad_request')).toThrow(/conflict/);
    const fine = await app.inject({ method: 'GET', url: '/fine' });
    expect(() => expectError(fine, 409, 'conflict')).toThrow();
  });
});

describe('bearer', () => {
  it('is the Authorization header of a token', () => {
    expect(bearer('abc.def')).toEqual({ authorization: 'Bearer abc.def' });
  });
});
