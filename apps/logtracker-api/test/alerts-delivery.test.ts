import { createHmac, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alertDeliveries } from '../src/db/schema/index.js';
import { createWebhookGuard } from '../src/modules/alerts/webhook-target.js';
import { createAlertWorker } from '../src/jobs/alert-worker.js';
import { retryDelayMs } from '../src/modules/alerts/alerts.service.js';
import {
  configureAlerts,
  deliveriesOfProject,
  errors,
  makeDueNow,
  postBatch,
  startHttpServer,
  waitFor,
  type ReceivedRequest,
} from './alerts-support.js';
import { buildTestApp, createProject, createUser, type TestApp, type TestUser } from './helpers.js';

const TIMEOUT_MS = 3_000;
const MAX_ATTEMPTS = 3;

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp({
    WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    ALERT_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
    ALERT_WORKER_INTERVAL_MS: '50',
  });
});
afterAll(() => t.close());

const worker = () => t.app.alerting.worker;

/** A project whose next error raises an alert delivered to `webhookUrl`; answers once the alert is recorded. */
async function alertTo(webhookUrl: string) {
  const owner = await createUser(t);
  const project = await createProject(t, owner, { name: 'Checkout API' });
  await configureAlerts(t, owner, project.id, { webhook_url: webhookUrl, threshold: { count: 2, window_minutes: 10 } });
  const response = await postBatch(t, owner, project.id, errors(2, 'payment provider timeout'));
  expect(response.statusCode).toBe(201);
  await t.app.alerting.evaluator.settled();
  const [delivery] = await deliveriesOfProject(t, project.id);
  if (!delivery) throw new Error('no delivery recorded');
  return { owner, project, delivery };
}

async function deliveryRow(id: number) {
  const [row] = await t.database.db.select().from(alertDeliveries).where(eq(alertDeliveries.id, id));
  if (!row) throw new Error(`no delivery ${id}`);
  return row;
}

async function secretOf(owner: TestUser, projectId: number) {
  const response = await t.app.inject({ method: 'GET', url: `/api/projects/${projectId}/config/webhook-secret`, headers: owner.headers });
  expect(response.statusCode, response.body).toBe(200);
  return response.json().data.webhook_secret as string;
}

/** What a receiver does: recompute the HMAC over "<timestamp>.<raw body>", compare in constant time, refuse stale requests. */
function verifySignature(secret: string, request: ReceivedRequest, toleranceSeconds = 300) {
  const timestamp = request.headers['x-logtracker-timestamp'];
  const signature = request.headers['x-logtracker-signature'];
  if (typeof timestamp !== 'string' || typeof signature !== 'string') return false;
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > toleranceSeconds) return false;
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(`${timestamp}.${request.body}`).digest('hex')}`);
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

describe('webhook delivery', () => {
  it('POSTs a signed alert that the receiver verifies with the project secret', async () => {
    const server = await startHttpServer((_req, res) => res.writeHead(204).end());
    try {
      const { owner, project, delivery } = await alertTo(server.url);
      expect(await worker().runOnce()).toEqual({ claimed: 1, delivered: 1, retried: 0, failed: 0 });

      expect(server.requests).toHaveLength(1);
      const [request] = server.requests;
      expect(request!.method).toBe('POST');
      expect(request!.url).toBe('/hooks/alerts');
      expect(request!.headers['content-type']).toBe('application/json');
      expect(request!.headers['x-logtracker-event']).toBe('alert.triggered');
      expect(request!.headers['x-logtracker-delivery']).toBe(String(delivery.id));
      expect(request!.headers['x-logtracker-timestamp']).toMatch(/^\d{10}$/);
      expect(request!.headers['x-logtracker-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);

      const secret = await secretOf(owner, project.id);
      expect(verifySignature(secret, request!)).toBe(true);
      // The signature covers the body and the timestamp: any change breaks it, as does another secret.
      expect(verifySignature(secret, { ...request!, body: request!.body.replace('"count":2', '"count":3') })).toBe(false);
      expect(
        verifySignature(secret, { ...request!, headers: { ...request!.headers, 'x-logtracker-timestamp': String(Number(request!.headers['x-logtracker-timestamp']) + 1) } }),
      ).toBe(false);
      expect(verifySignature('another secret', request!)).toBe(false);

      const payload = JSON.parse(request!.body);
      expect(payload).toEqual({
        event: 'alert.triggered',
        alert: {
          id: delivery.alertId,
          project_id: project.id,
          levels: ['error'],
          count: 2,
          threshold: 2,
          window_minutes: 10,
          window_start: expect.any(String),
          window_end: expect.any(String),
          samples: [
            expect.objectContaining({ level: 'error', message: expect.stringMatching(/^payment provider timeout #/), source: 'api' }),
            expect.objectContaining({ level: 'error', message: expect.stringMatching(/^payment provider timeout #/), source: 'api' }),
          ],
          created_at: expect.any(String),
        },
        project: { id: project.id, name: 'Checkout API' },
      });

      const stored = await deliveryRow(delivery.id);
      expect(stored).toMatchObject({ status: 'delivered', attempts: 1, lastError: null });
      expect(stored.deliveredAt).toBeInstanceOf(Date);

      // The list route shows the outcome; the next pass has nothing to do.
      const listed = await t.app.inject({ method: 'GET', url: `/api/projects/${project.id}/alerts`, headers: owner.headers });
      expect(listed.json().data[0].deliveries[0]).toMatchObject({
        channel: 'webhook',
        target: server.url,
        status: 'delivered',
        attempts: 1,
        last_error: null,
        next_attempt_at: null,
        delivered_at: expect.any(String),
      });
      expect((await worker().runOnce()).claimed).toBe(0);
      expect(server.requests).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  it('retries after a 500 with backoff, then delivers', async () => {
    const server = await startHttpServer((_req, res, index) => res.writeHead(index === 0 ? 500 : 200).end('ok'));
    try {
      const { owner, project, delivery } = await alertTo(server.url);
      const before = Date.now();
      expect(await worker().runOnce()).toEqual({ claimed: 1, delivered: 0, retried: 1, failed: 0 });
      const failedOnce = await deliveryRow(delivery.id);
      expect(failedOnce).toMatchObject({ status: 'pending', attempts: 1, lastError: 'webhook answered HTTP 500 Internal Server Error' });
      // 30 s ± 20 % after the first failure.
      const delay = failedOnce.nextAttemptAt.getTime() - before;
      expect(delay).toBeGreaterThan(23_000);
      expect(delay).toBeLessThan(37_000);

      // Not due yet: a pass leaves it alone.
      expect((await worker().runOnce()).claimed).toBe(0);
      expect(server.requests).toHaveLength(1);

      await makeDueNow(t, project.id);
      expect(await worker().runOnce()).toEqual({ claimed: 1, delivered: 1, retried: 0, failed: 0 });
      expect(server.requests).toHaveLength(2);
      // The retry is the same delivery, freshly signed.
      expect(server.requests[1]!.headers['x-logtracker-delivery']).toBe(String(delivery.id));
      expect(verifySignature(await secretOf(owner, project.id), server.requests[1]!)).toBe(true);
      expect(await deliveryRow(delivery.id)).toMatchObject({ status: 'delivered', attempts: 2 });
    } finally {
      await server.close();
    }
  });

  it(`marks a delivery failed after ALERT_MAX_ATTEMPTS (${MAX_ATTEMPTS}) failures, the backoff doubling`, async () => {
    const server = await startHttpServer((_req, res) => res.writeHead(503).end());
    try {
      const { project, delivery } = await alertTo(server.url);
      const delays: number[] = [];
      for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
        await makeDueNow(t, project.id);
        const before = Date.now();
        const run = await worker().runOnce();
        const row = await deliveryRow(delivery.id);
        expect(row.attempts).toBe(attempt);
        expect(row.lastError).toBe('webhook answered HTTP 503 Service Unavailable');
        if (attempt < MAX_ATTEMPTS) {
          expect(run).toMatchObject({ retried: 1, failed: 0 });
          expect(row.status).toBe('pending');
          delays.push(row.nextAttemptAt.getTime() - before);
        } else {
          expect(run).toMatchObject({ retried: 0, failed: 1 });
          expect(row.status).toBe('failed');
        }
      }
      expect(delays[1]! / delays[0]!).toBeGreaterThan(1.3);
      expect(delays[1]!).toBeGreaterThan(47_000);

      await makeDueNow(t, project.id);
      expect((await worker().runOnce()).claimed).toBe(0);
      expect(server.requests).toHaveLength(MAX_ATTEMPTS);
    } finally {
      await server.close();
    }
  });

  it(`gives up on a receiver that never answers after WEBHOOK_TIMEOUT_MS (${TIMEOUT_MS} ms)`, async () => {
    const server = await startHttpServer(() => {
      // Never answers.
    });
    try {
      const { delivery } = await alertTo(server.url);
      const started = Date.now();
      expect(await worker().runOnce()).toMatchObject({ claimed: 1, retried: 1 });
      const elapsed = Date.now() - started;
      expect(elapsed).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
      expect(elapsed).toBeLessThan(TIMEOUT_MS + 2_000);
      expect(server.requests).toHaveLength(1);
      expect(await deliveryRow(delivery.id)).toMatchObject({
        status: 'pending',
        attempts: 1,
        lastError: `no answer within ${TIMEOUT_MS} ms`,
      });
    } finally {
      await server.close();
    }
  });

  it('treats a refused connection and a redirect as failures', async () => {
    // A port that was free a moment ago: nothing listens there.
    const probe = createServer().listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const { port } = probe.address() as AddressInfo;
    probe.close();
    await once(probe, 'close');
    const refused = await alertTo(`http://127.0.0.1:${port}/hook`);
    const redirecting = await startHttpServer((_req, res) => res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' }).end());
    try {
      const redirected = await alertTo(redirecting.url);
      await worker().runOnce();
      expect((await deliveryRow(refused.delivery.id)).lastError).toMatch(/ECONNREFUSED/);
      expect(await deliveryRow(redirected.delivery.id)).toMatchObject({ status: 'pending', lastError: 'webhook answered HTTP 302 Found' });
      expect(redirecting.requests).toHaveLength(1);
    } finally {
      await redirecting.close();
    }
  });

  it('sends each delivery once when two workers poll the same database', async () => {
    const server = await startHttpServer((_req, res) => setTimeout(() => res.writeHead(200).end(), 50));
    try {
      const created = [];
      for (let i = 0; i < 6; i++) created.push(await alertTo(server.url));
      // A second worker, as another instance runs, over the same database.
      const other = createAlertWorker({
        db: t.database.db,
        mailer: t.app.alerting.mailer,
        log: t.app.log,
        intervalMs: 1000,
        maxAttempts: MAX_ATTEMPTS,
        webhookTimeoutMs: TIMEOUT_MS,
        webhookGuard: createWebhookGuard({ allowPrivateNetworks: true }),
        batchSize: 2,
      });
      const runs = await Promise.all([worker().runOnce(), other.runOnce(), other.runOnce(), worker().runOnce()]);
      expect(runs.reduce((sum, r) => sum + r.delivered, 0)).toBe(6);
      const ids = server.requests.map((r) => r.headers['x-logtracker-delivery']);
      expect(new Set(ids).size).toBe(6);
      expect(ids).toHaveLength(6);
      for (const { delivery } of created) expect((await deliveryRow(delivery.id)).status).toBe('delivered');
    } finally {
      await server.close();
    }
  });
});

describe('ingestion and delivery', () => {
  it('answers the ingestion request without waiting for a slow webhook', async () => {
    const server = await startHttpServer((_req, res) => setTimeout(() => res.writeHead(200).end(), 2_000));
    worker().start();
    try {
      const owner = await createUser(t);
      const project = await createProject(t, owner);
      await configureAlerts(t, owner, project.id, { webhook_url: server.url, threshold: { count: 1, window_minutes: 5 }, quiet_period_minutes: 0 });

      const started = Date.now();
      const response = await postBatch(t, owner, project.id, errors(3, 'crossing'));
      const answeredAt = Date.now();
      expect(response.statusCode).toBe(201);
      expect(answeredAt - started).toBeLessThan(1_000);
      expect(server.requests).toHaveLength(0);

      // The worker, on its own timer, picks the alert up and sits in the 2 s send…
      await waitFor(() => (server.requests.length > 0 ? true : undefined));
      // …while more logs are accepted as fast as ever: no transaction is held during the send.
      const during = Date.now();
      const second = await postBatch(t, owner, project.id, [{ level: 'info', message: 'still ingesting' }]);
      expect(second.statusCode).toBe(201);
      expect(Date.now() - during).toBeLessThan(1_000);

      const [delivered] = await waitFor(async () => {
        const rows = await deliveriesOfProject(t, project.id);
        return rows[0]?.status === 'delivered' ? rows : undefined;
      });
      expect(delivered!.deliveredAt!.getTime() - answeredAt).toBeGreaterThanOrEqual(1_900);
    } finally {
      await worker().stop();
      await server.close();
    }
  });
});

describe('retryDelayMs', () => {
  it('doubles from 30 s with ±20 % jitter, capped at an hour', () => {
    expect(retryDelayMs(1, () => 0.5)).toBe(30_000);
    expect(retryDelayMs(2, () => 0.5)).toBe(60_000);
    expect(retryDelayMs(5, () => 0.5)).toBe(480_000);
    expect(retryDelayMs(1, () => 0)).toBe(24_000);
    expect(retryDelayMs(1, () => 1)).toBe(36_000);
    expect(retryDelayMs(30, () => 0.5)).toBe(3_600_000);
  });
});
