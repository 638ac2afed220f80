import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, expectError, type TestApp } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(() => t.close());

describe('GET /api/health', () => {
  it('reports version 1.0.0 and a reachable database without authentication', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/health' });
    expect(response.statusCode).toBe(200);
    const { data } = response.json();
    expect(data.status).toBe('ok');
    expect(data.version).toBe('1.0.0');
    expect(data.database.status).toBe('up');
    expect(['pglite', 'postgres']).toContain(data.database.driver);
  });

  it('answers HEAD like every GET', async () => {
    const response = await t.app.inject({ method: 'HEAD', url: '/api/health' });
    expect(response.statusCode).toBe(200);
    expect(response.body).toBe('');
  });

  it('echoes a supplied request id and generates one otherwise', async () => {
    const supplied = await t.app.inject({ method: 'GET', url: '/api/health', headers: { 'x-request-id': 'ci-run-42' } });
    expect(supplied.headers['x-request-id']).toBe('ci-run-42');
    const generated = await t.app.inject({ method: 'GET', url: '/api/health' });
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('documentation and unknown routes', () => {
  it('serves an OpenAPI 3 document covering the routes', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/docs/json' });
    expect(response.statusCode).toBe(200);
    const doc = response.json();
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.info.version).toBe('1.0.0');
    for (const path of [
      '/api/auth/register',
      '/api/auth/login',
      '/api/auth/logout',
      '/api/user',
      '/api/health',
      '/api/projects',
      '/api/projects/{id}',
      '/api/projects/{project_id}/logs',
      '/api/projects/{project_id}/logs/batch',
      '/api/logs/{id}',
      '/api/projects/{project_id}/stats',
      '/api/projects/{project_id}/config',
    ]) {
      expect(doc.paths, path).toHaveProperty([path]);
    }
    expect(doc.paths['/api/projects'].post.operationId).toBe('createProject');
  });

  it('serves the browsable documentation', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/docs' });
    expect([200, 302]).toContain(response.statusCode);
  });

  it('answers 404 route_not_found in the envelope for an unknown route', async () => {
    expectError(await t.app.inject({ method: 'GET', url: '/api/nothing-here' }), 404, 'route_not_found');
  });
});
