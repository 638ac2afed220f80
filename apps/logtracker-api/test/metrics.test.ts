import type { AddressInfo } from 'node:net';
import { sampleValue } from '@repo/http/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { buildTestApp, createProject, createUser, expectError, type TestApp, type TestUser } from './helpers.js';

const TOKEN = 'logtracker-metrics-token';

async function scrape(t: TestApp) {
  const response = await t.app.inject({ method: 'GET', url: '/metrics' });
  expect(response.statusCode, response.body).toBe(200);
  return response.body;
}

describe('GET /metrics (log tracker)', () => {
  let t: TestApp;
  let owner: TestUser;
  let projectId: number;
  beforeAll(async () => {
    t = await buildTestApp();
    owner = await createUser(t);
    projectId = (await createProject(t, owner)).id;
  });
  afterAll(() => t.close());

  it('counts logs accepted, the requests that stored them and the refused ones, by ingest endpoint', async () => {
    const count = (text: string, name: string, endpoint: string) => sampleValue(text, name, { endpoint });
    const before = await scrape(t);
    expect(count(before, 'logtracker_logs_accepted_total', 'batch')).toBe(0);

    const batch = await t.app.inject({
      method: 'POST',
      url: `/api/projects/${projectId}/logs/batch`,
      headers: owner.headers,
      payload: { logs: [1, 2, 3].map((i) => ({ level: 'info', message: `entry ${i}` })) },
    });
    expect(batch.statusCode, batch.body).toBe(201);
    const single = await t.app.inject({
      method: 'POST',
      url: `/api/projects/${projectId}/logs`,
      headers: owner.headers,
      payload: { level: 'error', message: 'one' },
    });
    expect(single.statusCode, single.body).toBe(201);
    // A bad entry refuses the whole batch; no key at all refuses the export.
    expectError(
      await t.app.inject({
        method: 'POST',
        url: `/api/projects/${projectId}/logs/batch`,
        headers: owner.headers,
        payload: { logs: [{ level: 'loud', message: 'x' }] },
      }),
      422,
      'validation_error',
    );
    expectError(await t.app.inject({ method: 'POST', url: '/v1/logs', payload: { resourceLogs: [] } }), 401, 'unauthenticated');

    // An OTLP export with one record it cannot store (no body): one stored, one refused inside it.
    const key = await t.app.inject({ method: 'POST', url: `/api/projects/${projectId}/ingest-keys`, headers: owner.headers, payload: { name: 'otel' } });
    expect(key.statusCode, key.body).toBe(201);
    const otlp = await t.app.inject({
      method: 'POST',
      url: '/v1/logs',
      headers: { 'x-ingest-key': key.json<{ data: { key: string } }>().data.key },
      payload: {
        resourceLogs: [
          {
            scopeLogs: [
              {
                logRecords: [
                  { timeUnixNano: '1767323045250000000', severityNumber: 9, body: { stringValue: 'stored' } },
                  { timeUnixNano: '1767323045250000000', severityNumber: 9 },
                ],
              },
            ],
          },
        ],
      },
    });
    expect(otlp.statusCode, otlp.body).toBe(200);
    expect(otlp.json()).toMatchObject({ partialSuccess: { rejectedLogRecords: 1 } });

    const after = await scrape(t);
    expect(count(after, 'logtracker_logs_accepted_total', 'batch')).toBe(3);
    expect(count(after, 'logtracker_log_batches_total', 'batch')).toBe(1);
    expect(count(after, 'logtracker_logs_accepted_total', 'single')).toBe(1);
    expect(count(after, 'logtracker_ingest_rejected_total', 'batch')).toBe(1);
    expect(count(after, 'logtracker_ingest_rejected_total', 'otlp')).toBe(1);
    expect(count(after, 'logtracker_logs_accepted_total', 'otlp')).toBe(1);
    expect(count(after, 'logtracker_logs_rejected_total', 'otlp')).toBe(1);
    // The request histogram names the route's template, never the project's id.
    expect(
      sampleValue(after, 'http_request_duration_seconds_count', { method: 'POST', route: '/api/projects/:project_id/logs/batch', status_code: '201' }),
    ).toBe(1);
    expect(after).not.toContain(`/api/projects/${projectId}/`);
    // Both pools of the log tracker are reported (idle once the statistics job armed by the ingest is done).
    const pools = t.database.driver === 'postgres' ? ['main', 'custom_plan'] : ['main'];
    for (const pool of pools) await expect.poll(async () => sampleValue(await scrape(t), 'db_queries_in_flight', { pool })).toBe(0);
  });

  it('counts open live tails', async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as AddressInfo;
    const ws = new WebSocket(`ws://127.0.0.1:${port}/api/projects/${projectId}/logs/tail`, { headers: owner.headers });
    await new Promise((resolve, reject) => {
      ws.once('message', resolve);
      ws.once('error', reject);
    });
    expect(sampleValue(await scrape(t), 'websocket_connections', { endpoint: 'tail' })).toBe(1);
    ws.close();
    await expect.poll(async () => sampleValue(await scrape(t), 'websocket_connections', { endpoint: 'tail' })).toBe(0);
  });

  it('times the jobs it runs (log statistics after ingest)', async () => {
    await expect.poll(async () => sampleValue(await scrape(t), 'job_runs_total', { job_name: 'log_statistics', outcome: 'success' }), { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
  });
});

describe('GET /metrics with METRICS_TOKEN (log tracker)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ METRICS_TOKEN: TOKEN });
  });
  afterAll(() => t.close());

  it('answers 401 without the token, the metrics with it', async () => {
    expectError(await t.app.inject({ method: 'GET', url: '/metrics' }), 401, 'unauthenticated');
    const response = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(response.statusCode).toBe(200);
    expect(response.body).toContain('# TYPE logtracker_logs_accepted_total counter');
  });
});
