import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ChatRequest {
  model: string;
  messages: { role: string; content: string }[];
  response_format?: { type: string };
  authorization?: string;
}

/**
 * A local server speaking the OpenAI chat-completions protocol. `reply` decides each answer: a
 * text content, an HTTP status to fail with, or a delay past the client's timeout.
 */
export async function startChatServer(reply: (request: ChatRequest) => { content: string } | { status: number } | { hang: true }) {
  const requests: ChatRequest[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        res.writeHead(404).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ChatRequest;
      const request = { ...body, authorization: req.headers.authorization };
      requests.push(request);
      const answer = reply(request);
      if ('hang' in answer) return;
      if ('status' in answer) {
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'overloaded' } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'chatcmpl-1',
          object: 'chat.completion',
          model: `${body.model}-2026-01-01`,
          choices: [{ index: 0, message: { role: 'assistant', content: answer.content }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 321, completion_tokens: 45, total_tokens: 366 },
        }),
      );
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
