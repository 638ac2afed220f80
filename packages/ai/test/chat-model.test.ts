import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOpenAiCompatibleModel } from '../src/index.js';

interface Received {
  url: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

type Answer = { status: number; body: unknown } | { hang: true };

/** A local server on the chat-completions path; `next` decides the answer to each request. */
async function startServer() {
  const received: Received[] = [];
  let next: Answer = { status: 200, body: {} };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ url: req.url ?? '', headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> });
      if ('hang' in next) return;
      res.writeHead(next.status, { 'content-type': 'application/json' }).end(typeof next.body === 'string' ? next.body : JSON.stringify(next.body));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/`,
    received,
    answer(answer: Answer) {
      next = answer;
    },
    close() {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const completion = (content: unknown, extra: Record<string, unknown> = {}) => ({
  status: 200,
  body: { id: 'chatcmpl-1', choices: [{ index: 0, message: { role: 'assistant', content } }], ...extra },
});

describe('createOpenAiCompatibleModel', { timeout: 30_000 }, () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server?.close());

  const messages = [
    { role: 'system' as const, content: 'Be brief.' },
    { role: 'user' as const, content: 'Hello' },
  ];

  it('posts the messages to /chat/completions with the key, and answers the text, the model and the token counts', async () => {
    server.answer(completion('  Hi there.  ', { model: 'small-2026-01-01', usage: { prompt_tokens: 12, completion_tokens: 3 } }));
    const model = createOpenAiCompatibleModel({ url: server.url, apiKey: 'sk-test', model: 'small', timeoutMs: 5000 });

    const answer = await model.complete(messages, { json: false, maxTokens: 50 });

    expect(answer).toEqual({ text: 'Hi there.', model: 'small-2026-01-01', promptTokens: 12, completionTokens: 3 });
    const request = server.received.at(-1)!;
    expect(request.url).toBe('/v1/chat/completions');
    expect(request.headers.authorization).toBe('Bearer sk-test');
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.body).toEqual({ model: 'small', temperature: 0.2, max_tokens: 50, messages });
  });

  it('asks for a JSON object when told to, sends no key without one, and keeps its own model name when none is answered', async () => {
    server.answer(completion('{"a":1}', { usage: { prompt_tokens: -1, completion_tokens: 2.5 } }));
    const model = createOpenAiCompatibleModel({ url: server.url, model: 'small', timeoutMs: 5000 });

    const answer = await model.complete(messages, { json: true, maxTokens: 10 });

    expect(answer).toEqual({ text: '{"a":1}', model: 'small', promptTokens: null, completionTokens: null });
    const request = server.received.at(-1)!;
    expect(request.headers.authorization).toBeUndefined();
    expect(request.body.response_format).toEqual({ type: 'json_object' });
  });

  it('rejects on an HTTP error, an empty or missing text, and a body that is not JSON', async () => {
    const model = createOpenAiCompatibleModel({ url: server.url, model: 'small', timeoutMs: 5000 });
    server.answer({ status: 503, body: { error: { message: 'overloaded' } } });
    await expect(model.complete(messages, { json: false, maxTokens: 10 })).rejects.toThrow('model answered HTTP 503');
    server.answer(completion('   '));
    await expect(model.complete(messages, { json: false, maxTokens: 10 })).rejects.toThrow('model answered no text');
    server.answer({ status: 200, body: { choices: [] } });
    await expect(model.complete(messages, { json: false, maxTokens: 10 })).rejects.toThrow('model answered no text');
    server.answer({ status: 200, body: 'not json' });
    await expect(model.complete(messages, { json: false, maxTokens: 10 })).rejects.toThrow();
  });

  it('gives up after its timeout when the server never answers', async () => {
    server.answer({ hang: true });
    const model = createOpenAiCompatibleModel({ url: server.url, model: 'small', timeoutMs: 200 });
    const started = Date.now();
    await expect(model.complete(messages, { json: false, maxTokens: 10 })).rejects.toThrow(/timeout|aborted/i);
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
