import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, createProject, createUser, expectError, type TestApp, type TestUser } from './helpers.js';

let t: TestApp;
let owner: TestUser;
let projectId: number;

beforeAll(async () => {
  t = await buildTestApp();
  owner = await createUser(t);
  projectId = (await createProject(t, owner)).id;
});
afterAll(() => t?.close());

/** `{"a":{"a":…{}…}}`, `depth` objects deep. */
const nested = (depth: number) => `${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`;

const batch = (context: string) =>
  t.app.inject({
    method: 'POST',
    url: `/api/projects/${projectId}/logs/batch`,
    headers: { ...owner.headers, 'content-type': 'application/json' },
    payload: `{"logs":[{"level":"info","message":"first"},{"level":"error","message":"deep","context":${context}}]}`,
  });

describe('a JSON body nested too deep', () => {
  it('answers 400 in the envelope for a batch whose context is 5 000 levels deep, and stores nothing', async () => {
    const res = await batch(nested(5000));
    expectError(res, 400, 'bad_request');
    expect(res.json().message).toBe('JSON nesting deeper than 64 levels');
    const list = await t.app.inject({ method: 'GET', url: `/api/projects/${projectId}/logs`, headers: owner.headers });
    expect(list.statusCode, list.body).toBe(200);
    expect(list.json().data).toEqual([]);
  });

  it('still answers 422 naming the field for a context over its own bound of 32 levels, well within the body bound', async () => {
    const res = await batch(nested(40));
    const body = expectError(res, 422, 'validation_error');
    expect(Object.keys(body.errors ?? {})).toEqual(['logs.1.context']);
  });
});
