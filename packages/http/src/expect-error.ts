/**
 * Assertions on the one error envelope, for the apps' route tests. Test-only: it uses vitest's
 * `expect`, so only a test file imports it (`@repo/http/expect-error`).
 */
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { ErrorCode } from './errors.js';

export interface ErrorEnvelope {
  error: string;
  message: string;
  errors?: Record<string, string[]>;
  /** The state a refused state move found (409). */
  current_status?: string;
}

/** Asserts an error envelope with its status and code (and a message); answers the parsed body. */
export function expectError(response: LightMyRequestResponse, status: number, code: ErrorCode): ErrorEnvelope {
  expect(response.statusCode, response.body).toBe(status);
  const body = response.json() as ErrorEnvelope;
  expect(body.error).toBe(code);
  expect(typeof body.message).toBe('string');
  return body;
}

/** The Authorization header of a bearer token. */
export function bearer(token: string): { authorization: string } {
  return { authorization: `Bearer ${token}` };
}
