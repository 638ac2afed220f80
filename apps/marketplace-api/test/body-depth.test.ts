import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, buildTestApp, createAdmin, expectError, type TestApp, type TestUser } from './helpers.js';

let t: TestApp;
let admin: TestUser;

beforeAll(async () => {
  t = await buildTestApp();
  admin = await createAdmin(t);
});
afterAll(() => t?.close());

/** `{"a":{"a":…{}…}}`, `depth` objects deep. */
const nested = (depth: number) => `${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`;

describe('a JSON body nested too deep', () => {
  it('answers 400 in the envelope, not 500, for a broadcast whose data is 5 000 levels deep', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/admin/broadcast',
      headers: { ...bearer(admin.token), 'content-type': 'application/json' },
      payload: `{"audience":"all","title":"Deep","body":"Deep data","data":${nested(5000)}}`,
    });
    expectError(res, 400, 'bad_request');
    expect(res.json().message).toBe('JSON nesting deeper than 64 levels');
  });
});
