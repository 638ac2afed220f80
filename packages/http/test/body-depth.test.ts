import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BODY_DEPTH, nestsDeeperThan } from '../src/body-guards.js';
import type { AppInstance } from '../src/index.js';
import { buildApp, json } from './helpers.js';

/** `{"a":{"a":…{}…}}`: `depth` objects, one inside the other. */
const objects = (depth: number) => `${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`;
/** `[[…[]…]]`: `depth` arrays, one inside the other. */
const arrays = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

describe('nestsDeeperThan', () => {
  it('counts objects and arrays alike, `{}` being one level', () => {
    expect(nestsDeeperThan({}, 1)).toBe(false);
    expect(nestsDeeperThan({ a: {} }, 1)).toBe(true);
    expect(nestsDeeperThan(JSON.parse(objects(64)), 64)).toBe(false);
    expect(nestsDeeperThan(JSON.parse(objects(65)), 64)).toBe(true);
    expect(nestsDeeperThan(JSON.parse(arrays(64)), 64)).toBe(false);
    expect(nestsDeeperThan(JSON.parse(arrays(65)), 64)).toBe(true);
    expect(nestsDeeperThan({ list: [1, 'two', null, { three: [3] }] }, 4)).toBe(false);
    expect(nestsDeeperThan({ list: [1, 'two', null, { three: [3] }] }, 3)).toBe(true);
  });

  it('finds the deep branch among shallow ones, wherever it is', () => {
    const deep = JSON.parse(`{"first":[1,2,{"x":1}],"second":${objects(70)},"third":{"y":[]}}`) as unknown;
    expect(nestsDeeperThan(deep, 64)).toBe(true);
    expect(nestsDeeperThan(JSON.parse(`[${objects(70)},1,2]`), 64)).toBe(true);
  });

  it('takes 100 000 levels without overflowing its stack', () => {
    expect(nestsDeeperThan(JSON.parse(arrays(100_000)), 64)).toBe(true);
  });

  it('does not enter what JSON does not make: a Buffer, an instance of a class', () => {
    class Kept {
      inner = { a: { b: {} } };
    }
    expect(nestsDeeperThan(Buffer.from(arrays(100)), 1)).toBe(false);
    expect(nestsDeeperThan(new Kept(), 1)).toBe(false);
    expect(nestsDeeperThan(Object.assign(Object.create(null) as object, { a: { b: {} } }), 2)).toBe(true);
    expect(nestsDeeperThan('[[[[', 1)).toBe(false);
    expect(nestsDeeperThan(undefined, 1)).toBe(false);
  });
});

describe(`a body nested deeper than ${MAX_BODY_DEPTH} levels`, () => {
  let app: AppInstance;

  beforeAll(async () => {
    app = await buildApp();
    app.post('/anything', { schema: { body: z.unknown() } }, async (request) => ({ data: request.body }));
    // A schema that recurses over the value, as JSON.stringify in a refinement does.
    app.post('/sized', { schema: { body: z.object({ data: z.unknown().refine((d) => JSON.stringify(d).length < 1e6) }) } }, async () => ({ ok: true }));
    app.register(async (raw) => {
      raw.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
      raw.post('/raw', async (request) => ({ bytes: (request.body as Buffer).length }));
    });
    await app.ready();
  });
  afterAll(() => app.close());

  const post = (url: string, payload: string, type = 'application/json') =>
    app.inject({ method: 'POST', url, headers: { 'content-type': type }, payload });

  it(`passes at ${MAX_BODY_DEPTH} levels`, async () => {
    expect((await post('/anything', objects(MAX_BODY_DEPTH))).statusCode).toBe(200);
    expect((await post('/anything', arrays(MAX_BODY_DEPTH))).statusCode).toBe(200);
  });

  it.each([
    ['objects', objects(MAX_BODY_DEPTH + 1)],
    ['arrays', arrays(MAX_BODY_DEPTH + 1)],
    ['5 000 objects', objects(5000)],
    ['100 000 arrays', arrays(100_000)],
  ])('answers 400 in the envelope for %s one level too deep or more', async (_name, payload) => {
    const response = await post('/anything', payload);
    expect(response.statusCode).toBe(400);
    expect(json(response)).toEqual({ error: 'bad_request', message: `JSON nesting deeper than ${MAX_BODY_DEPTH} levels` });
  });

  it('answers 400, not 500, before a schema that recurses over the value runs', async () => {
    const response = await post('/sized', `{"data":${objects(5000)}}`);
    expect(response.statusCode).toBe(400);
    expect(json(response)).toMatchObject({ error: 'bad_request' });
  });

  it('leaves a body a route keeps as bytes alone', async () => {
    const response = await post('/raw', arrays(1000), 'application/octet-stream');
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ bytes: 2000 });
  });
});
