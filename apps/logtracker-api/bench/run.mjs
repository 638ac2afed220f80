// pnpm bench (log tracker): batch ingest throughput over HTTP and read latencies, on the
// embedded database by default or on the server named by BENCH_DATABASE_URL.
import { fileURLToPath } from 'node:url';
import { load, printTable, startService } from '../../../scripts/bench-lib.mjs';

const appDir = fileURLToPath(new URL('..', import.meta.url));
const databaseUrl = process.env.BENCH_DATABASE_URL;
const duration = Number(process.env.BENCH_SECONDS ?? 10);
const batchSize = 1000;

const service = await startService(
  appDir,
  {
    DATA_DIR: 'memory://',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    RATE_LIMIT_AUTHENTICATED: '100000000',
    RATE_LIMIT_PUBLIC: '100000000',
  },
  '/api/health',
);

async function call(method, path, body, token) {
  const response = await fetch(service.base + path, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

try {
  const password = 'bench-password';
  const registered = await call('POST', '/api/auth/register', {
    name: 'Bench',
    email: `bench-${Date.now()}@example.test`,
    password,
    password_confirmation: password,
  });
  const token = registered.data.token;
  const project = (await call('POST', '/api/projects', { name: 'bench' }, token)).data;
  const levels = ['info', 'info', 'info', 'debug', 'warning', 'error'];
  const batch = {
    logs: Array.from({ length: batchSize }, (_, i) => ({
      level: levels[i % levels.length],
      message: `request ${i} GET /api/orders/${1000 + i} completed in ${i % 97} ms for user ${i % 13}`,
      source: `service-${i % 5}`,
      context: { attempt: i % 3, region: 'eu-west-1' },
    })),
  };
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };

  const ingest = await load({
    url: `${service.base}/api/projects/${project.id}/logs/batch`,
    method: 'POST',
    headers,
    body: JSON.stringify(batch),
    connections: 10,
    duration,
  });
  const logsPerSecond = Math.round((ingest.requests.total * batchSize) / (ingest.duration || duration));

  const reads = {};
  for (const [name, path] of [
    ['list, first page', `/api/projects/${project.id}/logs`],
    ['list, level + search', `/api/projects/${project.id}/logs?level=error&search=orders%2F1042`],
    ['statistics, 24h', `/api/projects/${project.id}/stats?time_range=24h`],
  ]) {
    const result = await load({ url: service.base + path, headers, connections: 4, duration: Math.max(3, duration / 2) });
    reads[name] = result;
  }
  const stored = (await call('GET', `/api/projects/${project.id}/logs?per_page=1`, undefined, token)).meta.total;

  printTable(`Log tracker bench (${databaseUrl ? 'PostgreSQL' : 'PGlite'}, ${stored} logs stored, node ${process.version})`, [
    [`batch ingest, ${batchSize}/request, 10 clients`, `${logsPerSecond.toLocaleString('en')} logs/s`, '>= 40 000 logs/s (on PostgreSQL)'],
    ['batch ingest errors', `${ingest.errors + ingest.non2xx}`, '0'],
    ...Object.entries(reads).map(([name, r]) => [
      `${name}: p50 / p97.5 / p99`,
      `${r.latency.p50} / ${r.latency.p97_5} / ${r.latency.p99} ms (${Math.round(r.requests.average)} req/s, ${r.non2xx} non-2xx)`,
      'p95 <= 20 ms',
    ]),
  ]);
} finally {
  await service.stop();
}
