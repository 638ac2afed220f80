import { errorEnvelope, errorResponses, id } from '@repo/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { noRateLimit, type AppInstance } from '../src/index.js';
import { lintWithRedocly, operationsOf, requiresCredentials, validateWithSwaggerParser, documentProblems } from '../src/testing.js';
import { buildApp } from './helpers.js';

// A recursive schema, registered under an id as the zod type provider expects.
const node: z.ZodType<unknown> = z
  .lazy(() => z.object({ name: z.string(), children: z.array(node).optional() }))
  .meta({ id: 'TestNode' });

interface Document {
  paths: Record<string, Record<string, { parameters?: { name: string; in: string; schema: object; description?: string }[]; responses: Record<string, { description: string }>; security?: unknown; requestBody?: unknown }>>;
  components: { schemas: Record<string, object> };
  servers: unknown;
  security: unknown;
}

let app: AppInstance;
let document: Document;
beforeAll(async () => {
  app = await buildApp();
  app.get(
    '/things/:thing_id',
    {
      schema: {
        operationId: 'getThing',
        tags: ['logs'],
        summary: 'A thing',
        params: z.object({ thing_id: id }),
        querystring: z.object({ parent_id: id.optional().describe('Only the children of this thing') }),
        response: {
          200: z.object({ by_level: z.record(z.enum(['error', 'info']), z.number().int()) }),
          ...errorResponses(401, 404),
        },
      },
    },
    async () => ({ by_level: { error: 1, info: 2 } }),
  );
  app.post(
    '/trees',
    { schema: { operationId: 'createTree', tags: ['logs'], summary: 'A tree', security: [], body: z.object({ root: node.optional() }), response: { 204: z.null() } } },
    async (_request, reply) => reply.status(204).send(null),
  );
  app.post(
    '/things/:thing_id/probe',
    {
      config: noRateLimit,
      schema: { operationId: 'probeThing', tags: ['logs'], summary: 'A probe', params: z.object({ thing_id: id }), response: { 204: z.null() } },
    },
    async (_request, reply) => reply.status(204).send(null),
  );
  app.get(
    '/health-like',
    { config: noRateLimit, schema: { operationId: 'healthLike', tags: ['logs'], summary: 'A probe', response: { 200: z.object({ ok: z.boolean() }) } } },
    async () => ({ ok: true }),
  );
  app.put(
    '/limited',
    {
      bodyLimit: 1024,
      schema: {
        operationId: 'putLimited',
        tags: ['logs'],
        summary: 'A body of its own limit',
        body: z.object({ a: z.string() }),
        response: { 200: z.object({ a: z.string() }), 413: errorEnvelope.describe('Over 1 KiB') },
      },
    },
    async (request) => request.body,
  );
  app.get(
    '/files/*',
    { schema: { operationId: 'getFile', tags: ['logs'], summary: 'A file', security: [], params: z.object({ '*': z.string() }) } },
    async () => 'file',
  );
  await app.ready();
  document = app.swagger() as unknown as Document;
});
afterAll(() => app.close());

describe('openApiOptions', () => {
  it('documents decimal ids as positive integers, in paths and query strings', () => {
    const parameters = document.paths['/things/{thing_id}']!.get!.parameters!;
    expect(parameters.find((p) => p.name === 'thing_id')!.schema).toEqual({ type: 'integer', minimum: 1, maximum: 2_147_483_647 });
    expect(parameters.find((p) => p.name === 'parent_id')).toMatchObject({
      in: 'query',
      description: 'Only the children of this thing',
      schema: { type: 'integer', minimum: 1, maximum: 2_147_483_647 },
    });
  });

  it('describes every response by its status', () => {
    const { responses } = document.paths['/things/{thing_id}']!.get!;
    expect(Object.fromEntries(Object.entries(responses).map(([status, r]) => [status, r.description]))).toEqual({
      200: 'OK',
      401: 'Unauthenticated: the credentials are missing, invalid or expired',
      404: 'Not found',
      414: 'URI too long: a path parameter is over 100 characters',
      429: "Too many requests: retry after the `retry-after` header's seconds",
    });
    expect(document.paths['/trees']!.post!.responses['204']!.description).toBe('No content');
  });

  it('emits the registered components the document uses, and only those', () => {
    expect(Object.keys(document.components.schemas).sort()).toEqual(['ErrorEnvelope', 'TestNodeInput']);
    expect(JSON.stringify(document.paths['/trees']!.post!.requestBody)).toContain('"$ref":"#/components/schemas/TestNodeInput"');
  });

  it('lists the keys of a record over an enum', () => {
    const ok = document.paths['/things/{thing_id}']!.get!.responses['200'] as unknown as {
      content: { 'application/json': { schema: { properties: { by_level: object } } } };
    };
    expect(ok.content['application/json'].schema.properties.by_level).toMatchObject({
      properties: { error: { type: 'integer' }, info: { type: 'integer' } },
      required: ['error', 'info'],
      additionalProperties: false,
    });
  });

  it("lists the foundation's answers: 414 on every operation, 413 where a body is read, 429 unless the route is not rate limited", () => {
    const statuses = (path: string, method: string) => Object.keys(document.paths[path]![method]!.responses);
    expect(statuses('/things/{thing_id}', 'get')).toEqual(['200', '401', '404', '414', '429']);
    expect(statuses('/trees', 'post')).toEqual(['204', '413', '414', '429']);
    // A POST without a body schema still has its body read (and limited).
    expect(statuses('/things/{thing_id}/probe', 'post')).toEqual(['204', '413', '414']);
    expect(statuses('/health-like', 'get')).toEqual(['200', '414']);
    expect(statuses('/limited', 'put')).toEqual(['200', '413', '414', '429']);
    // The route's own entry wins over the shared one.
    expect(document.paths['/limited']!.put!.responses['413']!.description).toBe('Over 1 KiB');
    for (const status of ['413', '414', '429']) {
      expect(JSON.stringify(document.paths['/trees']!.post!.responses[status]), status).toContain('#/components/schemas/ErrorEnvelope');
    }
    // A route that declares no answer keeps Fastify's default one.
    expect(statuses('/files/{path}', 'get')).toEqual(['200']);
  });

  it('names the wildcard parameter', () => {
    expect(document.paths['/files/{path}']!.get!.parameters).toEqual([
      expect.objectContaining({ in: 'path', name: 'path', required: true }),
    ]);
  });

  it('declares a server and bearer tokens by default; public operations state none', () => {
    expect(document.servers).toEqual([{ url: '/', description: 'This server' }]);
    expect(document.security).toEqual([{ bearerAuth: [] }]);
    const operations = operationsOf(document);
    expect(operations.filter((op) => !requiresCredentials(op, document)).map((op) => op.operationId)).toEqual(['createTree', 'getFile']);
  });

  it('passes swagger-parser and redocly lint', async () => {
    await validateWithSwaggerParser(document);
    const errors = (await lintWithRedocly(document)).filter((p) => p.severity === 'error');
    expect(errors).toEqual([]);
  });
});

describe('documentProblems', () => {
  const sound = {
    openapi: '3.0.3',
    info: { title: 'T', version: '1', description: 'd', license: { name: 'MIT', url: 'https://opensource.org/license/mit' } },
    servers: [{ url: '/', description: 'This server' }],
    tags: [{ name: 'things', description: 'Things' }],
    security: [],
    paths: {
      '/things': {
        get: {
          operationId: 'listThings',
          summary: 'List things',
          tags: ['things'],
          responses: { 200: { description: 'OK' }, 400: { description: 'Bad request' } },
        },
      },
    },
  };

  it('finds nothing in a sound document', async () => {
    expect(await documentProblems(sound)).toEqual([]);
  });

  it('names an operation without a summary, an undeclared tag, a default description and empty servers', async () => {
    const broken = structuredClone(sound) as typeof sound & { servers: unknown[] };
    const op = broken.paths['/things'].get as Record<string, unknown>;
    delete op.summary;
    op.tags = ['other'];
    op.responses = { 200: { description: 'Default Response' }, 400: { description: 'Bad request' } };
    broken.servers = [];
    const problems = await documentProblems(broken, ['operation-summary /paths/~1things/get']);
    expect(problems).toEqual(
      expect.arrayContaining([
        'GET /things: no summary',
        'GET /things: tag other is not declared',
        'GET /things 200: no description',
        'servers: []',
      ]),
    );
  });
});
