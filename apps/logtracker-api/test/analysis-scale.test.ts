import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logs } from '../src/db/schema/index.js';
import { buildTestApp, createProject, createUser, type TestApp, type TestUser } from './helpers.js';

const N = 100_000;
let t: TestApp;
let owner: TestUser;
let projectId: number;

const shapes = [
  (i: number) => `GET /api/orders/${i} completed in ${i % 300} ms`,
  (i: number) => `user ${i % 977} logged in from 192.168.${i % 255}.${(i * 13) % 255}`,
  (i: number) => `worker-${i % 16} picked job ${i.toString(16)} from queue emails`,
  (i: number) => `payment ${i} failed: gateway timeout after ${1000 + (i % 5000)} ms`,
  (i: number) => `cache miss for key product:${i % 5000}`,
  (i: number) => `disk /dev/sd${'abcd'[i % 4]}${i % 8} at ${i % 100}% capacity`,
];

beforeAll(async () => {
  t = await buildTestApp();
  owner = await createUser(t);
  projectId = (await createProject(t, owner)).id;
  const now = Date.now();
  for (let start = 0; start < N; start += 2_000) {
    await t.database.db.insert(logs).values(
      Array.from({ length: 2_000 }, (_, k) => {
        const i = start + k;
        return {
          projectId,
          level: (i % 6 === 3 ? 'error' : 'info') as 'error' | 'info',
          message: shapes[i % shapes.length]!(i),
          timestamp: new Date(now - ((i * 800) % 86_000_000)),
          receivedAt: new Date(now),
        };
      }),
    );
  }
}, 300_000);
afterAll(() => t.close());

describe('analysis at scale', () => {
  it(`mines ${N.toLocaleString('en')} logs in seconds while ingestion keeps answering`, async () => {
    const latencies: number[] = [];
    let analysing = true;
    const ingest = (async () => {
      while (analysing) {
        const started = performance.now();
        const response = await t.app.inject({
          method: 'POST',
          url: `/api/projects/${projectId}/logs`,
          headers: owner.headers,
          payload: { level: 'info', message: 'heartbeat during analysis' },
        });
        expect(response.statusCode, response.body).toBe(201);
        latencies.push(performance.now() - started);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();

    const started = performance.now();
    const response = await t.app.inject({
      method: 'POST',
      url: `/api/projects/${projectId}/analyze`,
      headers: owner.headers,
      payload: { time_range: '24h' },
    });
    const seconds = (performance.now() - started) / 1000;
    analysing = false;
    await ingest;

    expect(response.statusCode, response.body).toBe(201);
    const result = response.json().data.result;
    expect(result.mined.logs).toBeGreaterThanOrEqual(N);
    expect(result.top_patterns.length).toBeGreaterThanOrEqual(6);
    latencies.sort((a, b) => a - b);
    const p95 = latencies[Math.floor(latencies.length * 0.95)] ?? 0;
    const median = latencies[Math.floor(latencies.length / 2)] ?? 0;
    // eslint-disable-next-line no-console
    console.log(
      `analysis of ${result.mined.logs} logs: ${seconds.toFixed(1)} s; ${latencies.length} ingestions meanwhile, p95 ${p95.toFixed(0)} ms, max ${latencies.at(-1)?.toFixed(0)} ms`,
    );
    expect(seconds).toBeLessThan(60);
    expect(latencies.length).toBeGreaterThan(3);
    // A dozen ingestions over the analysis on the embedded database, each waiting for the page of
    // tags being written (one connection): their "p95" is the slowest of them. None waits for the
    // analysis as a whole (3–5 s); the typical one waits less than a page's write. (The slowest was
    // 300–340 ms alone, 1 065 ms once with the other test files running beside it on 2 cores.)
    expect(latencies.at(-1)).toBeLessThan(2_000);
    expect(median).toBeLessThan(1_000);
  }, 300_000);
});
