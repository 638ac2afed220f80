import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { projects } from '../src/db/schema/index.js';
import {
  alertsOf,
  configureAlerts,
  deliveriesOfProject,
  endQuietPeriod,
  errors,
  postBatch,
} from './alerts-support.js';
import { addMember, buildTestApp, createLogs, createProject, createUser, expectError, type TestApp } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(() => t.close());

// Nothing listens at this address: evaluation never sends, it only records pending deliveries.
const WEBHOOK = 'http://127.0.0.1:9/hooks/alerts';

/** A fresh owner and project with notifications on: threshold `count` errors in 5 minutes. */
async function alertingProject(settings: Record<string, unknown> = {}, alertLevels?: string[]) {
  const owner = await createUser(t);
  const project = await createProject(t, owner);
  await configureAlerts(t, owner, project.id, { webhook_url: WEBHOOK, threshold: { count: 5, window_minutes: 5 }, ...settings }, alertLevels);
  return { owner, project };
}

/** Lets every evaluation the submitted logs started finish (they are never awaited by ingestion). */
const settled = () => t.app.alerting.evaluator.settled();

describe('alert evaluation', () => {
  it('records no alert below the threshold and one when the threshold is reached', async () => {
    const { owner, project } = await alertingProject();
    expect((await postBatch(t, owner, project.id, errors(4))).statusCode).toBe(201);
    await settled();
    expect(await alertsOf(t, project.id)).toHaveLength(0);

    expect((await postBatch(t, owner, project.id, errors(1, 'one more'))).statusCode).toBe(201);
    await settled();
    const [alert, ...others] = await alertsOf(t, project.id);
    expect(others).toHaveLength(0);
    expect(alert).toMatchObject({ levels: ['error'], count: 5, threshold: 5, windowMinutes: 5 });
    expect(alert?.samples).toHaveLength(5);
    expect(alert?.samples[0]).toMatchObject({ level: 'error', source: 'api', message: 'one more #0' });
    expect(alert!.windowEnd.getTime() - alert!.windowStart.getTime()).toBe(5 * 60_000);
    const deliveries = await deliveriesOfProject(t, project.id);
    expect(deliveries).toEqual([
      expect.objectContaining({ alertId: alert!.id, channel: 'webhook', target: WEBHOOK, status: 'pending', attempts: 0 }),
    ]);
  });

  it('records one delivery per channel: the webhook and each e-mail recipient', async () => {
    const { owner, project } = await alertingProject({
      threshold: { count: 1, window_minutes: 5 },
      email_recipients: ['oncall@example.test', 'lead@example.test'],
    });
    await postBatch(t, owner, project.id, errors(1));
    await settled();
    const deliveries = await deliveriesOfProject(t, project.id);
    expect(deliveries.map((d) => [d.channel, d.target])).toEqual([
      ['webhook', WEBHOOK],
      ['email', 'oncall@example.test'],
      ['email', 'lead@example.test'],
    ]);
  });

  it('makes exactly one alert from a storm of 50 concurrent batches', async () => {
    const { owner, project } = await alertingProject({ threshold: { count: 10, window_minutes: 5 } });
    const responses = await Promise.all(Array.from({ length: 50 }, (_, i) => postBatch(t, owner, project.id, errors(4, `storm ${i}`))));
    expect(responses.map((r) => r.statusCode)).toEqual(Array(50).fill(201));
    await settled();
    const found = await alertsOf(t, project.id);
    expect(found).toHaveLength(1);
    expect(found[0]!.count).toBeGreaterThanOrEqual(10);
    expect(await deliveriesOfProject(t, project.id)).toHaveLength(1);
  });

  it('makes exactly one alert when two instances share the database and the storm', async () => {
    // A second app over the same database: its own log bus and evaluator, as another instance has.
    const other = await buildApp(t.config, { database: t.database });
    await other.ready();
    try {
      const { owner, project } = await alertingProject({ threshold: { count: 10, window_minutes: 5 } });
      const apps = [t.app, other];
      const responses = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          apps[i % 2]!.inject({
            method: 'POST',
            url: `/api/projects/${project.id}/logs/batch`,
            headers: owner.headers,
            payload: { logs: errors(3, `instance storm ${i}`) },
          }),
        ),
      );
      expect(responses.every((r) => r.statusCode === 201)).toBe(true);
      await Promise.all([t.app.alerting.evaluator.settled(), other.alerting.evaluator.settled()]);
      expect(await alertsOf(t, project.id)).toHaveLength(1);
    } finally {
      await other.close();
    }
  });

  it('lets exactly one of many racing evaluations claim the quiet period', async () => {
    const { project } = await alertingProject({ threshold: { count: 3, window_minutes: 5 } });
    await createLogs(t, project.id, errors(3));
    // Straight to the evaluator, past the per-project coalescing: only the database can decide.
    const results = await Promise.all(
      Array.from({ length: 20 }, () => t.app.alerting.evaluator.evaluate(project.id, new Set(['error'] as const))),
    );
    expect(results.filter((r) => r !== null)).toHaveLength(1);
    expect(await alertsOf(t, project.id)).toHaveLength(1);
  });

  it('respects the quiet period, and alerts again once it has passed', async () => {
    const { owner, project } = await alertingProject({ threshold: { count: 2, window_minutes: 5 }, quiet_period_minutes: 30 });
    await postBatch(t, owner, project.id, errors(2));
    await settled();
    expect(await alertsOf(t, project.id)).toHaveLength(1);
    const [{ lastAlertAt } = { lastAlertAt: null }] = await t.database.db
      .select({ lastAlertAt: projects.lastAlertAt })
      .from(projects)
      .where(eq(projects.id, project.id));
    expect(lastAlertAt).toBeInstanceOf(Date);

    for (let i = 0; i < 3; i++) {
      await postBatch(t, owner, project.id, errors(5, `still failing ${i}`));
      await settled();
    }
    expect(await alertsOf(t, project.id)).toHaveLength(1);

    await endQuietPeriod(t, project.id);
    await postBatch(t, owner, project.id, errors(1, 'after the quiet period'));
    await settled();
    const found = await alertsOf(t, project.id);
    expect(found).toHaveLength(2);
    expect(found[1]!.count).toBe(18);
  });

  it('counts only logs at the alert levels, and is prompted only by them', async () => {
    const { owner, project } = await alertingProject({ threshold: { count: 3, window_minutes: 5 } });
    // Many warnings and infos with two errors: the errors alone are below the threshold.
    await postBatch(t, owner, project.id, [
      ...errors(2),
      ...Array.from({ length: 20 }, (_, i) => ({ level: i % 2 ? 'warning' : 'info', message: `noise ${i}` })),
    ]);
    await settled();
    expect(await alertsOf(t, project.id)).toHaveLength(0);

    // With warnings as the alert level, a batch of warnings alerts and counts only warnings.
    const response = await t.app.inject({
      method: 'PUT',
      url: `/api/projects/${project.id}/config`,
      headers: owner.headers,
      payload: { alert_levels: ['warning'] },
    });
    expect(response.statusCode).toBe(200);
    // Errors are no longer an alert level: they prompt nothing.
    await postBatch(t, owner, project.id, errors(10, 'errors only'));
    await settled();
    expect(await alertsOf(t, project.id)).toHaveLength(0);

    await postBatch(t, owner, project.id, [{ level: 'warning', message: 'disk 91% full' }]);
    await settled();
    const [alert, ...others] = await alertsOf(t, project.id);
    expect(others).toHaveLength(0);
    expect(alert).toMatchObject({ levels: ['warning'], count: 11 });
    expect(alert!.samples.every((s) => s.level === 'warning')).toBe(true);
  });

  it('counts several alert levels together', async () => {
    const { owner, project } = await alertingProject({ threshold: { count: 4, window_minutes: 5 } }, ['error', 'warning']);
    await postBatch(t, owner, project.id, [...errors(2), { level: 'warning', message: 'w1' }, { level: 'warning', message: 'w2' }]);
    await settled();
    const [alert] = await alertsOf(t, project.id);
    expect(alert).toMatchObject({ levels: ['error', 'warning'], count: 4 });
  });

  it('records nothing while notifications are disabled', async () => {
    const { owner, project } = await alertingProject({ threshold: { count: 1, window_minutes: 5 } });
    const off = await t.app.inject({
      method: 'PUT',
      url: `/api/projects/${project.id}/config`,
      headers: owner.headers,
      payload: { notification_settings: { enabled: false } },
    });
    expect(off.statusCode).toBe(200);
    await postBatch(t, owner, project.id, errors(20));
    await settled();
    expect(await alertsOf(t, project.id)).toHaveLength(0);
    const [row] = await t.database.db.select().from(projects).where(eq(projects.id, project.id));
    expect(row?.lastAlertAt).toBeNull();
  });

  it('does not count logs dated before the window (a backfill pages no one)', async () => {
    const { owner, project } = await alertingProject({ threshold: { count: 3, window_minutes: 5 } });
    const hourAgo = new Date(Date.now() - 60 * 60_000).toISOString();
    await postBatch(
      t,
      owner,
      project.id,
      errors(10, 'old').map((e) => ({ ...e, timestamp: hourAgo })),
    );
    await settled();
    expect(await alertsOf(t, project.id)).toHaveLength(0);
  });

  it('evaluates single entries and logs sent with an ingest key', async () => {
    const { owner, project } = await alertingProject({ threshold: { count: 2, window_minutes: 5 } });
    const single = await t.app.inject({
      method: 'POST',
      url: `/api/projects/${project.id}/logs`,
      headers: owner.headers,
      payload: { level: 'error', message: 'single entry' },
    });
    expect(single.statusCode).toBe(201);
    await settled();
    expect(await alertsOf(t, project.id)).toHaveLength(0);

    const created = await t.app.inject({
      method: 'POST',
      url: `/api/projects/${project.id}/ingest-keys`,
      headers: owner.headers,
      payload: { name: 'ci' },
    });
    expect(created.statusCode, created.body).toBe(201);
    const viaKey = await t.app.inject({
      method: 'POST',
      url: `/api/projects/${project.id}/logs/batch`,
      headers: { 'x-ingest-key': created.json().data.key as string },
      payload: { logs: errors(1, 'from CI') },
    });
    expect(viaKey.statusCode, viaKey.body).toBe(201);
    await settled();
    expect(await alertsOf(t, project.id)).toHaveLength(1);
  });

  it('does nothing for a project deleted before its evaluation ran', async () => {
    const { owner, project } = await alertingProject({ threshold: { count: 1, window_minutes: 5 } });
    const response = await postBatch(t, owner, project.id, errors(3));
    expect(response.statusCode).toBe(201);
    await t.database.db.delete(projects).where(eq(projects.id, project.id));
    await settled();
    expect(await alertsOf(t, project.id)).toHaveLength(0);
  });
});

describe('GET /api/projects/{project_id}/alerts', () => {
  const url = (projectId: number | string, query = '') => `/api/projects/${projectId}/alerts${query}`;

  async function projectWithAlerts(n: number) {
    const { owner, project } = await alertingProject({
      threshold: { count: 1, window_minutes: 5 },
      email_recipients: ['oncall@example.test'],
    });
    for (let i = 0; i < n; i++) {
      if (i > 0) await endQuietPeriod(t, project.id);
      await postBatch(t, owner, project.id, errors(1, `alert ${i}`));
      await settled();
    }
    expect(await alertsOf(t, project.id)).toHaveLength(n);
    return { owner, project };
  }

  it('lists a member the alerts, newest first, each with its deliveries', async () => {
    const { project } = await projectWithAlerts(3);
    const member = await createUser(t);
    await addMember(t, project.id, member);
    const response = await t.app.inject({ method: 'GET', url: url(project.id), headers: member.headers });
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(body.meta).toEqual({ current_page: 1, per_page: 20, total: 3, last_page: 1 });
    expect(body.data).toHaveLength(3);
    const ids = body.data.map((a: { id: number }) => a.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    const [newest] = body.data;
    expect(newest).toMatchObject({
      project_id: project.id,
      levels: ['error'],
      count: 3,
      threshold: 1,
      window_minutes: 5,
      samples: expect.arrayContaining([expect.objectContaining({ message: 'alert 2 #0', level: 'error', source: 'api' })]),
    });
    expect(new Date(newest.created_at).toISOString()).toBe(newest.created_at);
    expect(newest.deliveries).toEqual([
      {
        id: expect.any(Number),
        channel: 'webhook',
        target: WEBHOOK,
        status: 'pending',
        attempts: 0,
        last_error: null,
        next_attempt_at: expect.any(String),
        delivered_at: null,
      },
      expect.objectContaining({ channel: 'email', target: 'oncall@example.test', status: 'pending' }),
    ]);
  });

  it('pages with page and per_page', async () => {
    const { owner, project } = await projectWithAlerts(3);
    const all = (await t.app.inject({ method: 'GET', url: url(project.id), headers: owner.headers })).json().data;
    const second = await t.app.inject({ method: 'GET', url: url(project.id, '?page=2&per_page=2'), headers: owner.headers });
    expect(second.statusCode, second.body).toBe(200);
    expect(second.json().meta).toEqual({ current_page: 2, per_page: 2, total: 3, last_page: 2 });
    expect(second.json().data.map((a: { id: number }) => a.id)).toEqual([all[2].id]);
  });

  it('answers an empty page for a project without alerts, and HEAD', async () => {
    const owner = await createUser(t);
    const project = await createProject(t, owner);
    const response = await t.app.inject({ method: 'GET', url: url(project.id), headers: owner.headers });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ data: [], meta: { current_page: 1, per_page: 20, total: 0, last_page: 1 } });
    const head = await t.app.inject({ method: 'HEAD', url: url(project.id), headers: owner.headers });
    expect(head.statusCode).toBe(200);
  });

  it('answers 404 to a stranger and for a missing project', async () => {
    const { project } = await projectWithAlerts(1);
    const stranger = await createUser(t);
    expectError(await t.app.inject({ method: 'GET', url: url(project.id), headers: stranger.headers }), 404, 'not_found');
    expectError(await t.app.inject({ method: 'GET', url: url(2_147_483_647), headers: stranger.headers }), 404, 'not_found');
  });

  it('answers 401 without a token', async () => {
    const { project } = await projectWithAlerts(1);
    expectError(await t.app.inject({ method: 'GET', url: url(project.id) }), 401, 'unauthenticated');
  });

  it.each([
    ['page=0', 'page'],
    ['page=abc', 'page'],
    ['per_page=0', 'per_page'],
    ['per_page=101', 'per_page'],
  ])('answers 422 for %s', async (query, field) => {
    const owner = await createUser(t);
    const project = await createProject(t, owner);
    const error = expectError(
      await t.app.inject({ method: 'GET', url: url(project.id, `?${query}`), headers: owner.headers }),
      422,
      'validation_error',
    );
    expect(Object.keys(error.errors ?? {})).toContain(field);
  });

  it('answers 422 for a bad project id', async () => {
    const owner = await createUser(t);
    expectError(await t.app.inject({ method: 'GET', url: url('abc'), headers: owner.headers }), 422, 'validation_error');
  });

  it('is documented in the OpenAPI document', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json();
    const operation = doc.paths['/api/projects/{project_id}/alerts'].get;
    expect(operation.operationId).toBe('listAlerts');
    expect(operation.tags).toEqual(['alerts']);
    expect(operation.security).toEqual([{ bearerAuth: [] }]);
    expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['200', '401', '404', '422']));
    expect(doc.paths['/api/projects/{project_id}/config/webhook-secret'].get.operationId).toBe('getWebhookSecret');
  });
});

describe('GET /api/projects/{project_id}/config/webhook-secret', () => {
  const url = (projectId: number) => `/api/projects/${projectId}/config/webhook-secret`;

  it("answers the owner the project's signing secret", async () => {
    const owner = await createUser(t);
    const project = await createProject(t, owner);
    const response = await t.app.inject({ method: 'GET', url: url(project.id), headers: owner.headers });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().data).toEqual({ project_id: project.id, webhook_secret: project.webhookSecret });
    expect(project.webhookSecret).toMatch(/^[0-9a-f]{64}$/);
  });

  it('gives each project a secret of its own', async () => {
    const owner = await createUser(t);
    const a = await createProject(t, owner);
    const b = await createProject(t, owner);
    expect(a.webhookSecret).not.toBe(b.webhookSecret);
  });

  it('answers 403 to a member, 404 to a stranger, 401 without a token', async () => {
    const owner = await createUser(t);
    const project = await createProject(t, owner);
    const member = await createUser(t);
    await addMember(t, project.id, member);
    expectError(await t.app.inject({ method: 'GET', url: url(project.id), headers: member.headers }), 403, 'forbidden');
    const stranger = await createUser(t);
    expectError(await t.app.inject({ method: 'GET', url: url(project.id), headers: stranger.headers }), 404, 'not_found');
    expectError(await t.app.inject({ method: 'GET', url: url(project.id) }), 401, 'unauthenticated');
  });
});
