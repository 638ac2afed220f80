import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  allowsAnonymous,
  couldNameARow,
  encodeUrlText,
  envelopeProblems,
  fillPath,
  forgedTokens,
  hostileProblems,
  hostileRequest,
  jsonFor,
  readClaims,
  readOperations,
  readSettings,
  sampleValid,
  resolveRef,
  unresolvedRefs,
  type Exchange,
  type OpenApiDocument,
} from '../src/index.js';

const doc: OpenApiDocument = {
  components: {
    schemas: {
      Tag: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
      // Recursive, as the OTLP values are: generation stops at a depth and samples stop at {}.
      Tree: { type: 'object', properties: { children: { type: 'array', items: { $ref: '#/components/schemas/Tree' } } } },
    },
  },
  paths: {
    '/api/things/{thing}': {
      delete: { operationId: 'deleteThing', security: [{ bearerAuth: [] }], parameters: [{ name: 'thing', in: 'path', required: true, schema: { type: 'integer' } }], responses: { '200': {}, '401': {}, '404': {} } },
      put: {
        operationId: 'updateThing',
        security: [{ bearerAuth: [] }],
        parameters: [{ name: 'thing', in: 'path', required: true, schema: { type: 'integer' } }],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                properties: {
                  title: { type: 'string', minLength: 3, maxLength: 10 },
                  contact_email: { type: 'string', maxLength: 254 },
                  count: { type: 'integer', minimum: 1, maximum: 5 },
                  kind: { type: 'string', enum: ['a', 'b'] },
                  tags: { type: 'array', items: { $ref: '#/components/schemas/Tag' } },
                  tree: { $ref: '#/components/schemas/Tree' },
                },
                required: ['title'],
              },
            },
          },
        },
        responses: { '200': {}, '422': {} },
      },
    },
    '/api/health': { get: { operationId: 'health', responses: { '200': {} } }, head: { operationId: 'healthHead' } },
  },
};

describe('reading the document', () => {
  it('lists operations with their documented statuses, parameters and JSON body, without HEAD twins', () => {
    const ops = readOperations(doc);
    expect(ops.map((o) => `${o.method} ${o.id}`)).toEqual(['DELETE deleteThing', 'PUT updateThing', 'GET health']);
    const put = ops[1]!;
    expect([...put.responses]).toEqual([200, 422]);
    expect(put.pathParams.map((p) => p.name)).toEqual(['thing']);
    expect(put.body?.required).toBe(true);
    expect(put.body?.schema?.required).toEqual(['title']);
  });

  it('names every $ref the document does not define, and refuses to generate from one', () => {
    expect(unresolvedRefs(doc)).toEqual([]);
    const broken = structuredClone(doc);
    delete broken.components!.schemas!.Tree;
    expect(unresolvedRefs(broken)).toEqual([
      { ref: '#/components/schemas/Tree', at: '#/paths/~1api~1things~1{thing}/put/requestBody/content/application~1json/schema/properties/tree' },
    ]);
    expect(() => resolveRef(broken, '#/components/schemas/Tree')).toThrow(/names no component/);
  });

  it('treats no security, [] and an empty requirement as public', () => {
    expect(allowsAnonymous(undefined)).toBe(true);
    expect(allowsAnonymous([])).toBe(true);
    expect(allowsAnonymous([{}, { bearerAuth: [] }])).toBe(true);
    expect(allowsAnonymous([{ bearerAuth: [] }])).toBe(false);
  });

  it('fills path templates with raw URL text', () => {
    expect(fillPath('/a/{x}/b/{*}', { x: '%00', '*': '..%2f' })).toBe('/a/%00/b/..%2f');
    expect(() => fillPath('/a/{x}', {})).toThrow(/no value for path parameter x/);
  });
});

describe('URL text', () => {
  it('writes a lone surrogate as the invalid UTF-8 a careless encoder would send', () => {
    expect(encodeUrlText('a\ud800b')).toBe('a%ED%A0%80b');
    expect(encodeUrlText('\u{1f600}/é')).toBe(encodeURIComponent('\u{1f600}/é'));
  });

  it('knows which values could name an existing row', () => {
    for (const value of ['1', ' 7', '1e3', '0x10', '12abc', '%31', '1.5e-3']) expect(couldNameARow(value), value).toBe(true);
    for (const value of ['0', '-1', '2147483648', 'abc', '%zz', '0.5']) expect(couldNameARow(value), value).toBe(false);
  });
});

describe('generated requests', () => {
  const [remove, update] = readOperations(doc);

  it('are JSON text that parses, whatever the schema (a recursive one included)', () => {
    fc.assert(
      fc.property(jsonFor(doc, update!.body!.schema!), (text) => {
        JSON.parse(text);
      }),
      { numRuns: 300, seed: 7 },
    );
  });

  it('never name a possibly existing row in a state-changing request, unless it is the fixture', () => {
    fc.assert(
      fc.property(hostileRequest(doc, remove!, { thing: '42' }), (parts) => {
        const value = parts.params.thing!;
        expect(value === '42' || !couldNameARow(value)).toBe(true);
      }),
      { numRuns: 300, seed: 7 },
    );
  });

  it('fill every documented field with a valid sample, e-mail named fields included', () => {
    const sample = sampleValid(doc, update!.body!.schema!) as Record<string, unknown>;
    expect(sample).toMatchObject({ contact_email: 'route-suite@example.test', count: 1, kind: 'a', tags: [], tree: {} });
    expect((sample.title as string).length).toBeGreaterThanOrEqual(3);
    expect((sample.title as string).length).toBeLessThanOrEqual(10);
  });
});

describe('forged tokens', () => {
  const secret = 'a-secret-of-at-least-thirty-two-characters';
  const unsigned = `${Buffer.from('{"alg":"HS256","typ":"JWT"}').toString('base64url')}.${Buffer.from('{"sub":"7","sid":"s1"}').toString('base64url')}`;
  const valid = `${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`;
  const verifies = (token: string) => {
    const [h, p, s] = token.split('.');
    return createHmac('sha256', secret).update(`${h}.${p}`).digest('base64url') === s;
  };

  it('name the same session, and only the expired one carries the app signature', () => {
    const forged = Object.fromEntries(forgedTokens(valid, secret).map((f) => [f.name, f.token]));
    expect(Object.keys(forged)).toEqual(['signed with another key', 'expired (signed with the app key)', 'alg none', 'not a JWT']);
    for (const token of Object.values(forged).slice(0, 3)) expect(readClaims(token)).toMatchObject({ sub: '7', sid: 's1' });
    expect(verifies(forged['signed with another key']!)).toBe(false);
    expect(verifies(forged['expired (signed with the app key)']!)).toBe(true);
    expect(readClaims(forged['expired (signed with the app key)']!).exp).toBeLessThan(Date.now() / 1000);
    expect(forged['alg none']!.endsWith('.')).toBe(true);
  });
});

describe('verdicts', () => {
  const table = { bad_request: 400, uri_too_long: 414, internal_error: 500 };
  const exchange = (status: number, body: string, type = 'application/json; charset=utf-8'): Exchange => ({
    method: 'GET',
    url: '/x',
    headers: {},
    status,
    responseHeaders: { 'content-type': type },
    body,
  });

  it('accept the envelope with a code of the table matching the status', () => {
    expect(envelopeProblems(exchange(414, '{"error":"uri_too_long","message":"Too long"}'), table)).toEqual([]);
  });

  it("refuse Fastify's own error body, plain text, and a code answering another status", () => {
    const fastify = '{"error":"Bad Request","code":"FST_ERR_MAX_PARAM_LENGTH","message":"too long","statusCode":414}';
    expect(envelopeProblems(exchange(414, fastify), table)).toEqual(['a 414 whose error "Bad Request" is not a code of the error table']);
    expect(envelopeProblems(exchange(400, 'Invalid Preflight Request', 'text/plain'))).toEqual([
      'a 400 answered as text/plain, not the JSON envelope',
    ]);
    expect(envelopeProblems(exchange(400, '{"error":"uri_too_long","message":"x"}'), table)).toEqual([
      'a 400 whose error uri_too_long answers 414 in the error table',
    ]);
  });

  it('refuse a 5xx and an undocumented status, but not a shared one', () => {
    const [op] = readOperations(doc);
    expect(hostileProblems(op!, exchange(500, '{"error":"internal_error","message":"x"}'), table)).toEqual(['a server error (500)']);
    expect(hostileProblems(op!, exchange(201, '{}'), table)[0]).toMatch(/^status 201 is not documented/);
    expect(hostileProblems(op!, exchange(400, '{"error":"bad_request","message":"x"}'), table)).toEqual([]);
    // The documents list 414 (and 413, 429) where an operation can answer it: undocumented, it is refused.
    expect(op!.responses.has(414)).toBe(false);
    expect(hostileProblems(op!, exchange(414, '{"error":"uri_too_long","message":"x"}'), table)[0]).toMatch(/^status 414 is not documented/);
  });
});

describe('settings', () => {
  it('default to a fixed seed and a small number of runs', () => {
    expect(readSettings({})).toEqual({ seed: 20_261_125, runs: 20, path: undefined });
    expect(readSettings({ ROUTE_SUITE_SEED: '-5', ROUTE_SUITE_RUNS: '200', ROUTE_SUITE_PATH: '7' })).toEqual({ seed: -5, runs: 200, path: '7' });
  });

  it('name the variable that is wrong', () => {
    expect(() => readSettings({ ROUTE_SUITE_RUNS: '0' })).toThrow(/ROUTE_SUITE_RUNS/);
    expect(() => readSettings({ ROUTE_SUITE_PATH: '1:2' })).toThrow(/ROUTE_SUITE_PATH/);
  });
});
