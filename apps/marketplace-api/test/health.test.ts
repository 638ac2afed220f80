import { sql } from 'drizzle-orm';
import { queryRows } from '@repo/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(() => t.close());

describe('GET /api/v1/health', () => {
  it('reports version 1.0.0 and a reachable database without authentication', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/v1/health' });
    expect(response.statusCode).toBe(200);
    const { data } = response.json();
    expect(data).toMatchObject({ status: 'ok', version: '1.0.0', database: { status: 'up' } });
    expect(response.headers['x-request-id']).toBeTruthy();
  });

  it('answers 503 with the database marked down when it cannot be reached', async () => {
    const broken = await buildTestApp();
    await broken.database.close();
    const response = await broken.app.inject({ method: 'GET', url: '/api/v1/health' });
    expect(response.statusCode).toBe(503);
    expect(response.json().data).toMatchObject({ status: 'degraded', database: { status: 'down' } });
    await broken.app.close();
    await broken.database.destroy().catch(() => undefined);
  });

  it('has the extensions its later migrations rely on', async () => {
    const rows = await queryRows<{ extname: string }>(t.database.db, sql`select extname from pg_extension order by 1`);
    expect(rows.map((r) => r.extname)).toEqual(expect.arrayContaining(['pg_trgm', 'btree_gist', 'unaccent', 'cube', 'earthdistance']));
  });
});

describe('documentation and conventions', () => {
  it('serves its OpenAPI 3 document with version 1.0.0', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/docs/json' });
    expect(response.statusCode).toBe(200);
    const doc = response.json();
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.info.version).toBe('1.0.0');
    expect(doc.paths).toHaveProperty(['/api/v1/health']);
  });

  it('answers unknown routes with 404 route_not_found in the envelope', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/v1/nothing' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ error: 'route_not_found' });
  });

  it('allows the local front-end origins with credentials', async () => {
    const response = await t.app.inject({
      method: 'OPTIONS',
      url: '/api/v1/health',
      headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'GET' },
    });
    expect(response.headers['access-control-allow-origin']).toBe('http://localhost:5173');
    expect(response.headers['access-control-allow-credentials']).toBe('true');
  });
});
