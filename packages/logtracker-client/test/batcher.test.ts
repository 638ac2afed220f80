import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { Batcher, type Batch, type SendOutcome } from '../src/batcher.js';
import { batchSender, createLogTrackerClient } from '../src/client.js';
import type { LogEntry } from '../src/entry.js';
import { parseRetryAfter, retryDelay } from '../src/retry.js';

const entry = (i: number, message = `line ${i}`): LogEntry => ({ level: 'info', message, timestamp: new Date(1_767_225_600_000 + i).toISOString() });

/** A send that records each batch and answers what `answer` says (stored by default). */
function recordingSend(answer: (batch: Batch, attempt: number) => SendOutcome | Promise<SendOutcome> = () => ({ kind: 'stored', bytesSent: 1 })) {
  const attempts: Batch[] = [];
  const send = async (batch: Batch) => {
    attempts.push(batch);
    return answer(batch, attempts.filter((b) => b === batch).length);
  };
  return { attempts, send };
}

const quickBackoff = { baseMs: 1, maxMs: 5 };

/** The entries a batch's body holds. */
const logsOf = (batch: Batch) => (JSON.parse(batch.json) as { logs: LogEntry[] }).logs;

describe('flushing', () => {
  it('sends a batch at maxEntries, another before the body would pass maxBytes, and the rest after flushMs', async () => {
    const { attempts, send } = recordingSend();
    const batcher = new Batcher({ send, maxEntries: 3, maxBytes: 400, flushMs: 50 });
    for (let i = 0; i < 3; i++) batcher.add(entry(i));
    await expect.poll(() => attempts.length).toBe(1);
    batcher.add(entry(3, 'x'.repeat(150)));
    batcher.add(entry(4, 'y'.repeat(150)));
    // Two 200-byte entries do not fit in 400 bytes: the first leaves on its own.
    await expect.poll(() => attempts.length).toBe(2);
    expect(logsOf(attempts[1]!).map((e) => e.message[0])).toEqual(['x']);
    const started = Date.now();
    await expect.poll(() => attempts.length, { interval: 5 }).toBe(3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(40);
    expect(attempts.flatMap((b) => logsOf(b).map((e) => e.timestamp))).toEqual([0, 1, 2, 3, 4].map((i) => entry(i).timestamp));
    expect(await batcher.close(1000)).toMatchObject({ lines: 5, delivered: 5, lost: 0, batches: 3 });
  });

  it.each([1, 2, 3])('sends batches in order, %i in flight at most, each with its own Idempotency-Key', async (concurrency) => {
    let inFlight = 0;
    let most = 0;
    const { attempts, send } = recordingSend(async () => {
      most = Math.max(most, ++inFlight);
      await new Promise((resolve) => setTimeout(resolve, 2));
      inFlight--;
      return { kind: 'stored', bytesSent: 1 };
    });
    const batcher = new Batcher({ send, maxEntries: 10, maxQueued: 100, concurrency });
    for (let i = 0; i < 200; i++) batcher.add(entry(i));
    expect(await batcher.close(5000)).toMatchObject({ delivered: 200, batches: 20 });
    expect(most).toBe(concurrency);
    expect(attempts.map((b) => b.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(attempts.flatMap((b) => logsOf(b).map((e) => e.message))).toEqual(Array.from({ length: 200 }, (_, i) => `line ${i}`));
    expect(new Set(attempts.map((b) => b.idempotencyKey)).size).toBe(20);
  });
});

describe('back-pressure', () => {
  it('makes the producer wait once maxQueued batches wait, and lets it go as they leave', async () => {
    // Each send waits until the test releases it, oldest first.
    const pending: (() => void)[] = [];
    const release = () => pending.shift()?.();
    const { send } = recordingSend(() => new Promise((resolve) => pending.push(() => resolve({ kind: 'stored', bytesSent: 1 }))));
    const batcher = new Batcher({ send, maxEntries: 2, maxQueued: 3 });
    const waits: (Promise<void> | undefined)[] = [];
    for (let i = 0; i < 6; i++) waits.push(batcher.add(entry(i)));
    // Three batches of two: the producer is told to wait at the sixth entry, not before.
    expect(waits.slice(0, 5).every((w) => w === undefined)).toBe(true);
    expect(waits[5]).toBeInstanceOf(Promise);
    expect(batcher.queued).toBe(3);
    let resumed = false;
    void waits[5]!.then(() => (resumed = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(resumed).toBe(false);
    release();
    await expect.poll(() => resumed).toBe(true);
    expect(batcher.queued).toBe(2);
    const closing = batcher.close(1000);
    for (let i = 0; i < 2; i++) {
      await expect.poll(() => pending.length).toBe(1);
      release();
    }
    expect(await closing).toMatchObject({ delivered: 6, lost: 0 });
  });
});

describe('retries', () => {
  it('retries network errors and retryable answers with the same Idempotency-Key, counting them', async () => {
    const { attempts, send } = recordingSend((_batch, attempt) => {
      if (attempt === 1) throw new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') });
      if (attempt === 2) return { kind: 'retry', reason: '503 service_unavailable' };
      return { kind: 'stored', bytesSent: 10 };
    });
    const events: string[] = [];
    const batcher = new Batcher({ send, backoff: quickBackoff, onEvent: (e) => events.push(e.kind === 'retry' ? e.reason : e.kind) });
    batcher.add(entry(1));
    expect(await batcher.close(2000)).toMatchObject({ delivered: 1, retries: 2, lost: 0 });
    expect(new Set(attempts.map((b) => b.idempotencyKey)).size).toBe(1);
    expect(events).toEqual(['fetch failed: connect ECONNREFUSED', '503 service_unavailable']);
  });

  it('does not retry a refused batch: it is lost, reported, and the next one is sent', async () => {
    const { attempts, send } = recordingSend((batch) => (batch.seq === 1 ? { kind: 'rejected', reason: '401 unauthorized' } : { kind: 'stored', bytesSent: 1 }));
    const events: string[] = [];
    const batcher = new Batcher({ send, maxEntries: 2, onEvent: (e) => events.push(`${e.kind} ${e.batch.seq}`) });
    for (let i = 0; i < 4; i++) batcher.add(entry(i));
    expect(await batcher.close(1000)).toMatchObject({ delivered: 2, lost: 2 });
    expect(attempts).toHaveLength(2);
    expect(events).toEqual(['rejected 1']);
  });

  it('gives up at the close deadline and counts what is left as lost', async () => {
    const { send } = recordingSend(() => ({ kind: 'retry', reason: 'down' }));
    const batcher = new Batcher({ send, maxEntries: 2, backoff: quickBackoff });
    for (let i = 0; i < 5; i++) batcher.add(entry(i));
    const started = Date.now();
    expect(await batcher.close(150)).toMatchObject({ delivered: 0, lost: 5 });
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('backs off exponentially with full jitter, never less than Retry-After', () => {
    const backoff = { baseMs: 100, maxMs: 1000 };
    expect([0, 1, 2, 3, 10].map((attempt) => retryDelay(attempt, backoff, undefined, () => 0.999))).toEqual([99, 199, 399, 799, 999]);
    expect(retryDelay(5, backoff, undefined, () => 0)).toBe(0);
    expect(retryDelay(0, backoff, 2000, () => 0.5)).toBe(2000);
    expect(parseRetryAfter('3')).toBe(3000);
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:05 GMT', Date.parse('Wed, 21 Oct 2015 07:28:00 GMT'))).toBe(5000);
    expect(parseRetryAfter('soon')).toBeUndefined();
  });
});

describe('over HTTP', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => close?.());

  async function server(handle: (request: IncomingMessage, body: Buffer, response: ServerResponse) => void) {
    const http = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => handle(request, Buffer.concat(chunks), response));
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    close = () =>
      new Promise((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    return `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  }

  it("honours a 429's Retry-After, retries 409 with Retry-After and 5xx, and sends the key and Idempotency-Key every time", async () => {
    const seen: { at: number; key: string | undefined; idempotency: string | undefined; ingest: string | undefined }[] = [];
    const answers = [
      [429, { 'retry-after': '1' }],
      [409, { 'retry-after': '0' }],
      [503, {}],
      [201, {}],
    ] as const;
    const url = await server((request, _body, response) => {
      seen.push({ at: Date.now(), key: request.url, idempotency: request.headers['idempotency-key'] as string, ingest: request.headers['x-ingest-key'] as string });
      const [status, headers] = answers[seen.length - 1]!;
      response.writeHead(status, { 'content-type': 'application/json', ...headers }).end(status === 201 ? '{"data":{"accepted":1}}' : '{"error":"busy","message":"later"}');
    });
    const client = createLogTrackerClient({ url, key: 'lt_secret' });
    const batcher = new Batcher({ send: batchSender({ client, projectId: 7 }), backoff: { baseMs: 1, maxMs: 10 } });
    batcher.add(entry(1));
    expect(await batcher.close(10_000)).toMatchObject({ delivered: 1, retries: 3 });
    expect(seen).toHaveLength(4);
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(990);
    expect(new Set(seen.map((s) => s.idempotency)).size).toBe(1);
    expect(seen.every((s) => s.key === '/api/projects/7/logs/batch' && s.ingest === 'lt_secret')).toBe(true);
  });

  it('sends gzip-compressed bodies when asked, with Content-Encoding: gzip', async () => {
    let received: unknown;
    const url = await server((request, body, response) => {
      received = { encoding: request.headers['content-encoding'], body: JSON.parse(gunzipSync(body).toString('utf8')) as unknown };
      response.writeHead(201, { 'content-type': 'application/json' }).end('{"data":{"accepted":1}}');
    });
    const client = createLogTrackerClient({ url, key: 'k' });
    const outcome = await client.sendBatch(3, [entry(1)], { idempotencyKey: 'b-1', gzip: true });
    expect(outcome.kind).toBe('stored');
    expect(received).toEqual({ encoding: 'gzip', body: { logs: [entry(1)] } });
  });

  it('retries a server that takes the connection and never answers, once the attempt times out', async () => {
    let calls = 0;
    const url = await server((_request, _body, response) => {
      if (++calls === 2) response.writeHead(201, { 'content-type': 'application/json' }).end('{"data":{"accepted":1}}');
    });
    const client = createLogTrackerClient({ url, key: 'k' });
    const batcher = new Batcher({ send: batchSender({ client, projectId: 1, requestTimeoutMs: 200 }), backoff: quickBackoff });
    batcher.add(entry(1));
    expect(await batcher.close(5000)).toMatchObject({ delivered: 1, retries: 1 });
  });
});
