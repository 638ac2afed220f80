import { gzipSync } from 'node:zlib';
import createClient from 'openapi-fetch';
import type { Batch, Send, SendOutcome } from './batcher.js';
import type { LogEntry } from './entry.js';
import type { components, paths } from './generated/openapi.js';
import { parseRetryAfter } from './retry.js';

export type { components, operations, paths } from './generated/openapi.js';

export interface LogTrackerClientOptions {
  /** The log tracker's address, e.g. https://logs.example.com (its API is under /api). */
  url: string;
  /** A project's ingest key, sent as `X-Ingest-Key`. */
  key: string;
  /** Another fetch (tests, proxies); the global one by default. */
  fetch?: (input: Request) => Promise<Response>;
}

export interface SendBatchOptions {
  /** The same key on every retry of one batch: the server stores it once. */
  idempotencyKey: string;
  /** Sends the body gzip-compressed (`Content-Encoding: gzip`), for servers that take it. */
  gzip?: boolean;
  signal?: AbortSignal;
}

type ErrorEnvelope = components['schemas']['ErrorEnvelope'];
type BatchBody = paths['/api/projects/{project_id}/logs/batch']['post']['requestBody']['content']['application/json'];

/**
 * The log tracker's API, typed from its OpenAPI document (openapi-fetch over the types
 * openapi-typescript generated), authenticated by an ingest key; `sendBatch` posts one batch of logs
 * and says whether to retry it.
 */
export function createLogTrackerClient(options: LogTrackerClientOptions) {
  const api = createClient<paths>({
    baseUrl: options.url.replace(/\/+$/, ''),
    headers: { 'x-ingest-key': options.key },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });

  /** One batch of logs; the outcome says whether it was stored, is worth retrying, or was refused. */
  function sendBatch(projectId: number, logs: LogEntry[], send: SendBatchOptions): Promise<SendOutcome> {
    return sendBatchJson(projectId, JSON.stringify({ logs } satisfies BatchBody), send);
  }

  /** The same, for a body already serialised as the batch route takes it (`{"logs":[…]}`). */
  async function sendBatchJson(projectId: number, json: string, send: SendBatchOptions): Promise<SendOutcome> {
    // Sent as a string: Node's fetch sends one two to three times faster than the same bytes in a Buffer.
    const wire = send.gzip ? gzipSync(json, { level: 1 }) : json;
    const result = await api.POST('/api/projects/{project_id}/logs/batch', {
      params: { path: { project_id: projectId }, header: { 'Idempotency-Key': send.idempotencyKey } },
      // The body is the JSON text itself, which the serializer passes on as it is.
      body: wire as unknown as BatchBody,
      bodySerializer: () => wire,
      headers: send.gzip ? { 'content-encoding': 'gzip' } : {},
      ...(send.signal ? { signal: send.signal } : {}),
    });
    const bytesSent = typeof wire === 'string' ? Buffer.byteLength(wire) : wire.length;
    return outcomeOf(result.response, result.error as ErrorEnvelope | undefined, bytesSent);
  }

  return { api, sendBatch, sendBatchJson };
}
export type LogTrackerClient = ReturnType<typeof createLogTrackerClient>;

/**
 * Retried: 408, 429 and every 5xx (the server is busy or its database is down), and 409 with
 * Retry-After (the same batch, sent before over a connection that was cut, is still being stored).
 * Any other answer refuses the batch for good: sending it again would be refused again.
 */
export function outcomeOf(response: Response, error: ErrorEnvelope | undefined, bytesSent: number): SendOutcome {
  const status = response.status;
  if (status >= 200 && status < 300) return { kind: 'stored', bytesSent };
  const reason = `${status}${error?.error ? ` ${error.error}` : ''}${error?.message ? `: ${error.message}` : ''}`;
  const retryAfter = response.headers.get('retry-after');
  if (status === 408 || status === 429 || status >= 500 || (status === 409 && retryAfter !== null)) {
    const retryAfterMs = parseRetryAfter(retryAfter);
    return retryAfterMs === undefined ? { kind: 'retry', reason } : { kind: 'retry', reason, retryAfterMs };
  }
  return { kind: 'rejected', reason };
}

export interface BatchSenderOptions {
  client: LogTrackerClient;
  projectId: number;
  gzip?: boolean;
  /** One attempt's bound: a server that takes the connection and never answers is tried again. */
  requestTimeoutMs?: number;
}

/**
 * The batcher's `send`: one attempt at posting a batch, bounded in time. The bound is a timer that
 * holds the process open (AbortSignal.timeout's does not): a request left hanging on a connection
 * cut mid-request holds no handle of its own, and the process would otherwise end quietly, with
 * status 0, its lines neither delivered nor counted as lost.
 */
export function batchSender(options: BatchSenderOptions): Send {
  const timeoutMs = options.requestTimeoutMs ?? 30_000;
  return async (batch: Batch, signal: AbortSignal) => {
    const bound = new AbortController();
    const timer = setTimeout(() => bound.abort(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError')), timeoutMs);
    try {
      return await options.client.sendBatchJson(options.projectId, batch.json, {
        idempotencyKey: batch.idempotencyKey,
        gzip: options.gzip ?? false,
        signal: AbortSignal.any([signal, bound.signal]),
      });
    } finally {
      clearTimeout(timer);
    }
  };
}
