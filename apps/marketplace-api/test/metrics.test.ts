import type { AddressInfo } from 'node:net';
import { sampleValue } from '@repo/http/testing';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { loadConfig } from '../src/config.js';
import { bearer, buildTestApp, createClient, expectError, type TestApp } from './helpers.js';

const TOKEN = 'metrics-token-0123456789';

async function scrape(t: TestApp, headers: Record<string, string> = {}) {
  const response = await t.app.inject({ method: 'GET', url: '/metrics', headers });
  expect(response.statusCode).toBe(200);
  return response.body;
}

describe('GET /metrics', () => {
  let t: TestApp;
  beforeAll(async () => {
    // The outbox is delivered when a test asks (no timer's queries in flight behind the counts).
    t = await buildTestApp({ OUTBOX_INTERVAL_MS: '0' });
  });
  afterAll(() => t.close());

  it('answers the Prometheus text format with process, request, database, job, outbox and websocket metrics', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = response.body;
    for (const name of [
      'process_cpu_user_seconds_total',
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
      'nodejs_gc_duration_seconds',
      'http_request_duration_seconds',
      'db_queries_in_flight',
      'job_runs_total',
      'job_duration_seconds',
      'marketplace_outbox_lag_seconds',
      'websocket_connections',
    ]) {
      expect(text, name).toMatch(new RegExp(`^# TYPE ${name} `, 'm'));
    }
    expect(sampleValue(text, 'websocket_connections', { endpoint: 'realtime' })).toBe(0);
    // Not part of the API's contract: absent from the OpenAPI document.
    const document = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json<{ paths: Record<string, unknown> }>();
    expect(document.paths['/metrics']).toBeUndefined();
  });

  it('counts requests by route template and status, and unmatched URLs under one label', async () => {
    const client = await createClient(t);
    const series = { method: 'GET', route: '/api/v1/vehicles', status_code: '200' };
    const before = sampleValue(await scrape(t), 'http_request_duration_seconds_count', series) ?? 0;
    for (let i = 0; i < 3; i++) {
      expect((await t.app.inject({ method: 'GET', url: '/api/v1/vehicles', headers: bearer(client.token) })).statusCode).toBe(200);
    }
    await t.app.inject({ method: 'GET', url: '/api/v1/vehicles' });
    await t.app.inject({ method: 'GET', url: '/api/v1/no-such-thing/123' });
    await t.app.inject({ method: 'GET', url: '/api/v1/no-such-thing/456?x=1' });

    const text = await scrape(t);
    expect(sampleValue(text, 'http_request_duration_seconds_count', series)).toBe(before + 3);
    expect(sampleValue(text, 'http_request_duration_seconds_count', { ...series, status_code: '401' })).toBe(1);
    // The sum of the latencies moved too, and every bucket up to +Inf holds the three.
    expect(sampleValue(text, 'http_request_duration_seconds_sum', series)).toBeGreaterThan(0);
    expect(sampleValue(text, 'http_request_duration_seconds_bucket', { ...series, le: '+Inf' })).toBe(before + 3);
    expect(sampleValue(text, 'http_request_duration_seconds_count', { method: 'GET', route: 'unmatched', status_code: '404' })).toBe(2);
    // A raw URL never becomes a label: the label set stays bounded.
    expect(text).not.toContain('no-such-thing');
    // HEAD requests are counted under their own method, once.
    await t.app.inject({ method: 'HEAD', url: '/api/v1/health' });
    const after = await scrape(t);
    expect(sampleValue(after, 'http_request_duration_seconds_count', { method: 'HEAD', route: '/api/v1/health', status_code: '200' })).toBe(1);
  });

  it('reports the outbox lag per consumer from the oldest undelivered event, and the dispatch job runs', async () => {
    await t.app.outboxDispatch.drain();
    expect(sampleValue(await scrape(t), 'marketplace_outbox_lag_seconds', { consumer: 'realtime' })).toBe(0);

    await t.database.db.execute(
      sql`insert into domain_events (type, subject_type, subject_id, payload, occurred_at)
          values ('metrics.test', 'test', 1, '{}'::jsonb, now() - interval '90 seconds')`,
    );
    const lagging = await scrape(t);
    expect(sampleValue(lagging, 'marketplace_outbox_lag_seconds', { consumer: 'realtime' })).toBeGreaterThanOrEqual(90);
    const runs = sampleValue(lagging, 'job_runs_total', { job_name: 'outbox_dispatch', outcome: 'success' }) ?? 0;

    // Delivered once the inserting transaction is older than every running one (commit order).
    await expect
      .poll(async () => {
        await t.app.outboxDispatch.drain();
        return sampleValue(await scrape(t), 'marketplace_outbox_lag_seconds', { consumer: 'realtime' });
      })
      .toBe(0);
    const delivered = await scrape(t);
    expect(sampleValue(delivered, 'job_runs_total', { job_name: 'outbox_dispatch', outcome: 'success' })).toBeGreaterThan(runs);
    expect(sampleValue(delivered, 'job_duration_seconds_count', { job_name: 'outbox_dispatch' })).toBeGreaterThan(runs);
  });

  it('shows the queries in flight on the database pool', async () => {
    if (t.database.driver === 'postgres') {
      // A query still running when Prometheus scrapes.
      // Drizzle's query runs once something awaits it: Promise.resolve starts it now.
      const slow = Promise.resolve(t.database.db.execute(sql`select pg_sleep(0.5)`));
      await expect.poll(() => t.database.poolStats()[0]?.inFlight).toBeGreaterThanOrEqual(1);
      const busy = await scrape(t);
      await slow;
      expect(sampleValue(busy, 'db_queries_in_flight', { pool: 'main' })).toBeGreaterThanOrEqual(1);
      expect(sampleValue(busy, 'db_pool_size', { pool: 'main' })).toBeGreaterThan(0);
    } else {
      // PGlite runs a statement synchronously in this thread: a transaction is what stays in flight.
      await t.database.db.transaction(async (tx) => {
        await tx.execute(sql`select 1`);
        expect(t.database.poolStats()).toEqual([{ pool: 'main', size: null, inFlight: 1 }]);
      });
    }
    expect(sampleValue(await scrape(t), 'db_queries_in_flight', { pool: 'main' })).toBe(0);
  });

  it('counts open real-time WebSocket connections', async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as AddressInfo;
    const ws = new WebSocket(`ws://127.0.0.1:${port}/app/marketplace-key?protocol=7`);
    await new Promise((resolve, reject) => {
      ws.once('message', resolve);
      ws.once('error', reject);
    });
    expect(sampleValue(await scrape(t), 'websocket_connections', { endpoint: 'realtime' })).toBe(1);
    ws.close();
    await expect.poll(async () => sampleValue(await scrape(t), 'websocket_connections', { endpoint: 'realtime' })).toBe(0);
  });
});

describe('GET /metrics with METRICS_TOKEN', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ METRICS_TOKEN: TOKEN });
  });
  afterAll(() => t.close());

  it('answers 401 without the token or with another one, the metrics with it', async () => {
    const anonymous = await t.app.inject({ method: 'GET', url: '/metrics' });
    expectError(anonymous, 401, 'unauthenticated');
    expect(anonymous.headers['www-authenticate']).toBe('Bearer');
    expectError(await t.app.inject({ method: 'GET', url: '/metrics', headers: bearer(`${TOKEN}x`) }), 401, 'unauthenticated');
    expectError(await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: TOKEN } }), 401, 'unauthenticated');
    const text = await scrape(t, bearer(TOKEN));
    expect(text).toContain('# TYPE http_request_duration_seconds histogram');
  });
});

describe('metrics configuration', () => {
  const production = { NODE_ENV: 'production', SMTP_URL: 'smtp://127.0.0.1:2525', JWT_SECRET: 'x'.repeat(40), DATA_DIR: 'memory://' };

  it('keeps the metrics off the public port in production unless a token or a port of their own is set', () => {
    expect(loadConfig(production).metrics).toEqual({ token: undefined, port: undefined, onAppPort: false });
    expect(loadConfig({ ...production, METRICS_TOKEN: TOKEN }).metrics).toMatchObject({ token: TOKEN, onAppPort: true });
    expect(loadConfig({ ...production, METRICS_PORT: '9464' }).metrics).toMatchObject({ port: 9464, onAppPort: false });
    expect(loadConfig({ NODE_ENV: 'development', DATA_DIR: 'memory://' }).metrics.onAppPort).toBe(true);
  });

  it('refuses a short token and a metrics port equal to the app port', () => {
    expect(() => loadConfig({ DATA_DIR: 'memory://', METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN: must be at least 16 characters/);
    expect(() => loadConfig({ DATA_DIR: 'memory://', PORT: '8000', METRICS_PORT: '8000' })).toThrow(/METRICS_PORT: must differ from PORT/);
  });
});

describe('metrics on a port of their own (METRICS_PORT)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ METRICS_PORT: '0', METRICS_TOKEN: TOKEN });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(() => t.close());

  it('serves /metrics on the separate listener only, behind the token', async () => {
    const address = t.app.metrics.address();
    if (!address) throw new Error('the metrics listener is not listening');
    const base = `http://127.0.0.1:${address.port}`;
    expect((await fetch(`${base}/metrics`)).status).toBe(401);
    const scraped = await fetch(`${base}/metrics`, { headers: bearer(TOKEN) });
    expect(scraped.status).toBe(200);
    expect(scraped.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(await scraped.text()).toContain('# TYPE marketplace_outbox_lag_seconds gauge');
    expect((await fetch(`${base}/api/v1/health`)).status).toBe(404);

    const { port } = t.app.server.address() as AddressInfo;
    const onAppPort = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: bearer(TOKEN) });
    expect(onAppPort.status).toBe(404);
    expect(((await onAppPort.json()) as { error: string }).error).toBe('route_not_found');
  });
});
