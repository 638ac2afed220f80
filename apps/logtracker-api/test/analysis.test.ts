import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { and, count, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logs } from '../src/db/schema/index.js';
import { buildTestApp, createLogs, createProject, createUser, expectError, type TestApp, type TestUser } from './helpers.js';

const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000);

/** Realistic lines from a few templates, with variable parts. */
function lines(n: number, startMinutesAgo: number, spanMinutes: number) {
  const templates = [
    (i: number) => ({ level: 'info' as const, message: `GET /api/orders/${1000 + i} completed in ${i % 90} ms`, source: 'api' }),
    (i: number) => ({ level: 'info' as const, message: `user ${i % 50} logged in from 10.0.${i % 255}.${(i * 7) % 255}`, source: 'auth' }),
    (i: number) => ({ level: 'warning' as const, message: `cache miss for key session:${(i * 7919).toString(16)}`, source: 'api' }),
    (i: number) => ({ level: 'error' as const, message: `payment ${i} failed: gateway timeout after ${3000 + i} ms`, source: 'payments' }),
  ];
  return Array.from({ length: n }, (_, i) => ({
    ...templates[i % templates.length]!(i),
    timestamp: new Date(Date.now() - (startMinutesAgo - (spanMinutes * i) / n) * 60_000),
  }));
}

let t: TestApp;
let owner: TestUser;
let stranger: TestUser;
let projectId: number;

beforeAll(async () => {
  t = await buildTestApp();
  owner = await createUser(t);
  stranger = await createUser(t);
  projectId = (await createProject(t, owner)).id;
  await createLogs(t, projectId, lines(400, 600, 590));
});
afterAll(() => t.close());

const analyze = (body: object, user: TestUser = owner, id = projectId) =>
  t.app.inject({ method: 'POST', url: `/api/projects/${id}/analyze`, headers: user.headers, payload: body });

describe('POST /api/projects/{id}/analyze', () => {
  it('mines patterns, tags every log of the range and reports the facts', async () => {
    const response = await analyze({ time_range: '24h' });
    expect(response.statusCode, response.body).toBe(201);
    const { data } = response.json();
    expect(data.summary).toMatch(/400 logs in the last 24h/);
    expect(data.narrative).toBeNull();
    const r = data.result;
    expect(r.total).toBe(400);
    expect(r.by_level).toEqual({ error: 100, warning: 100, info: 200, debug: 0 });
    expect(r.error_rate).toBe(0.25);
    expect(r.mined).toEqual({ logs: 400, patterns: 4 });
    expect(r.top_patterns).toHaveLength(4);
    for (const p of r.top_patterns) {
      expect(p.count).toBe(100);
      expect(p.share).toBe(0.25);
      expect(p.template).toContain('<*>');
    }
    expect(r.top_patterns.map((p: { template: string }) => p.template)).toEqual(
      expect.arrayContaining(['GET <*> completed in <*> ms']),
    );
    // Everything was seen for the first time within the range.
    expect(r.new_patterns).toHaveLength(4);
    expect(r.top_sources[0]).toEqual({ source: 'api', count: 200 });

    const [untagged] = await t.database.db
      .select({ n: count() })
      .from(logs)
      .where(
        and(
          eq(logs.projectId, projectId),
          sql`not exists (select 1 from log_patterns lp
                           where lp.project_id = ${logs.projectId} and lp.timestamp = ${logs.timestamp} and lp.log_id = ${logs.id})`,
        ),
      );
    expect(untagged?.n).toBe(0);
  });

  it('lets the log list filter by pattern and shows each log its pattern', async () => {
    const insights = (await t.app.inject({ method: 'GET', url: `/api/projects/${projectId}/insights`, headers: owner.headers })).json();
    const payments = insights.data.patterns.find((p: { template: string }) => p.template.startsWith('payment'));
    expect(payments).toMatchObject({ count: 100, levels: ['error'] });
    expect(payments.sample).toMatch(/^payment \d+ failed/);
    expect(payments.first_seen).toBeTruthy();
    expect(Date.parse(payments.last_seen)).toBeGreaterThanOrEqual(Date.parse(payments.first_seen));

    const list = await t.app.inject({
      method: 'GET',
      url: `/api/projects/${projectId}/logs?pattern_id=${payments.id}&per_page=500`,
      headers: owner.headers,
    });
    expect(list.statusCode).toBe(200);
    const body = list.json();
    expect(body.meta.total).toBe(100);
    expect(body.data.every((l: { pattern_id: number; message: string }) => l.pattern_id === payments.id && l.message.startsWith('payment'))).toBe(true);

    const one = (await t.app.inject({ method: 'GET', url: `/api/logs/${body.data[0].id}`, headers: owner.headers })).json();
    expect(one.data.pattern_id).toBe(payments.id);
  });

  it('keeps counts exact when a range is analysed again, and tags logs that arrived since', async () => {
    await createLogs(t, projectId, lines(8, 5, 4));
    const again = (await analyze({})).json().data.result;
    expect(again.mined.logs).toBe(8);
    expect(again.total).toBe(408);
    const insights = (await t.app.inject({ method: 'GET', url: `/api/projects/${projectId}/insights`, headers: owner.headers })).json();
    const total = insights.data.patterns.reduce((sum: number, p: { count: number }) => sum + p.count, 0);
    expect(total).toBe(408);
    expect(insights.data.latest_analysis.result.total).toBe(408);
  });

  it('narrows the report to the levels asked for and leads the summary with the focus areas', async () => {
    const { data } = (await analyze({ time_range: '24h', log_levels: ['error'], focus_areas: ['performance', 'errors'] })).json();
    expect(data.result.total).toBe(102);
    expect(data.result.top_patterns).toHaveLength(1);
    expect(data.result.top_patterns[0].template).toMatch(/^payment <\*> failed/);
    expect(data.result.focus.performance).toEqual([data.result.top_patterns[0].pattern_id]);
    expect(data.summary).toMatch(/Performance-related patterns: "payment/);
    expect(data.summary.indexOf('Performance')).toBeLessThan(data.summary.indexOf('Error rate'));
  });

  it('reports a rate anomaly against the previous period', async () => {
    const p = await createProject(t, owner);
    // A steady trickle yesterday, then a burst inside one hourly bucket today (buckets start at
    // the range's start, so on whole hours before now).
    await createLogs(
      t,
      p.id,
      Array.from({ length: 24 }, (_, i) => ({ level: 'error' as const, message: `disk /dev/sd${'abc'[i % 3]} nearly full`, timestamp: minutesAgo(24 * 60 + 30 + i * 60) })),
    );
    await createLogs(
      t,
      p.id,
      Array.from({ length: 60 }, (_, i) => ({ level: 'error' as const, message: `disk /dev/sd${'abc'[i % 3]} nearly full`, timestamp: minutesAgo(115 - i / 2) })),
    );
    const r = (await analyze({ focus_areas: ['anomalies'] }, owner, p.id)).json().data;
    const level = r.result.anomalies.find((a: { kind: string }) => a.kind === 'level');
    expect(level).toMatchObject({ level: 'error', count: 60, baseline_per_bucket: 1, ratio: 60, bucket_seconds: 3600 });
    const pattern = r.result.anomalies.find((a: { kind: string }) => a.kind === 'pattern');
    expect(pattern).toMatchObject({ count: 60, template: 'disk <*> nearly full' });
    expect(r.result.new_patterns).toHaveLength(0);
    expect(r.summary).toMatch(/rate anomal/);
  });

  it('answers with a plain summary for an empty range', async () => {
    const empty = await createProject(t, owner);
    const { data } = (await analyze({ time_range: '1h' }, owner, empty.id)).json();
    expect(data.result.total).toBe(0);
    expect(data.summary).toBe('No logs at the selected levels (error, warning, info, debug) in the last 1h.');
  });

  it('validates the request', async () => {
    const bad = expectError(await analyze({ time_range: '2h', log_levels: ['fatal'], focus_areas: ['vibes'] }), 422, 'validation_error');
    expect(Object.keys(bad.errors ?? {})).toEqual(expect.arrayContaining(['time_range', 'log_levels.0', 'focus_areas.0']));
    expectError(await analyze({ log_levels: [] }), 422, 'validation_error');
    expectError(await analyze({ log_levels: ['error', 'error'] }), 422, 'validation_error');
  });

  it('is for members only', async () => {
    expectError(await analyze({}, stranger), 404, 'not_found');
    expectError(await t.app.inject({ method: 'POST', url: `/api/projects/${projectId}/analyze`, payload: {} }), 401, 'unauthenticated');
    expectError(
      await t.app.inject({ method: 'GET', url: `/api/projects/${projectId}/insights`, headers: stranger.headers }),
      404,
      'not_found',
    );
    expectError(await t.app.inject({ method: 'GET', url: `/api/projects/${projectId}/insights` }), 401, 'unauthenticated');
    expectError(
      await t.app.inject({ method: 'GET', url: `/api/projects/${projectId}/insights?limit=0`, headers: owner.headers }),
      422,
      'validation_error',
    );
  });

  it('answers insights with no analysis yet', async () => {
    const fresh = await createProject(t, owner);
    const { data } = (await t.app.inject({ method: 'GET', url: `/api/projects/${fresh.id}/insights`, headers: owner.headers })).json();
    expect(data).toEqual({ latest_analysis: null, patterns: [] });
  });
});

describe('the optional AI narrative', () => {
  let server: Server;
  let mode: 'ok' | 'fail' | 'hang' = 'ok';
  const received: { authorization?: string; body: { model: string; messages: { role: string; content: string }[] } }[] = [];
  let ai: TestApp;
  let user: TestUser;
  let project: number;

  beforeAll(async () => {
    server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        received.push({ authorization: req.headers.authorization, body: JSON.parse(raw) });
        if (mode === 'hang') return;
        if (mode === 'fail') {
          res.writeHead(500).end('upstream exploded');
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({ choices: [{ message: { role: 'assistant', content: ' Payments are timing out. ' } }] }),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    ai = await buildTestApp({ AI_API_URL: `http://127.0.0.1:${port}/v1`, AI_API_KEY: 'sk-test', AI_MODEL: 'tiny-model', AI_TIMEOUT_MS: '300' });
    user = await createUser(ai);
    project = (await createProject(ai, user)).id;
    await createLogs(ai, project, lines(20, 60, 50));
  });
  afterAll(async () => {
    await ai.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const run = () =>
    ai.app.inject({ method: 'POST', url: `/api/projects/${project}/analyze`, headers: user.headers, payload: {} });

  it('adds the model narrative, having sent it the computed facts', async () => {
    mode = 'ok';
    const { data } = (await run()).json();
    expect(data.narrative).toBe('Payments are timing out.');
    expect(data.ai_model).toBe('tiny-model');
    const call = received.at(-1)!;
    expect(call.authorization).toBe('Bearer sk-test');
    expect(call.body.model).toBe('tiny-model');
    const facts = JSON.parse(call.body.messages.find((m) => m.role === 'user')!.content);
    expect(facts.total).toBe(20);
    expect(facts.summary).toBe(data.summary);
  });

  it('falls back to the deterministic result when the model fails or times out', async () => {
    for (const m of ['fail', 'hang'] as const) {
      mode = m;
      const response = await run();
      expect(response.statusCode).toBe(201);
      const { data } = response.json();
      expect(data.narrative).toBeNull();
      expect(data.ai_model).toBeNull();
      expect(data.summary).toMatch(/20 logs in the last 24h/);
    }
  });
});
