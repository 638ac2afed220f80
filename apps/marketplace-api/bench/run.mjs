// pnpm bench (marketplace): the floor every route inherits from the shared HTTP stack (the health
// route), and the common read path — bearer token, session lookup, the caller's rows, the envelope —
// against a bare Fastify + postgres.js endpoint doing the same work (scripts/bare-reads.mjs),
// alternating in one run so both see the same machine.
//
// On PostgreSQL: BENCH_DATABASE_URL, or a throwaway server started here (scripts/bench-postgres.mjs);
// without PostgreSQL installed, the health figures on PGlite only.
// Knobs: BENCH_SECONDS (health run, default 10), BENCH_COMMON_SECONDS (each common-path run, default 5).
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { benchAppEnv, load, measureCommonPath, printTable, startBareReads, startService } from '../../../scripts/bench-lib.mjs';
import { startPostgres } from '../../../scripts/bench-postgres.mjs';

const appDir = fileURLToPath(new URL('..', import.meta.url));
const resultsFile = fileURLToPath(new URL('results.md', import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const COMMON_SECONDS = Number(process.env.BENCH_COMMON_SECONDS ?? 5);
const VEHICLES = 3;
const log = (message) => console.log(`[bench] ${message}`);

const stops = [];
async function stopAll() {
  for (const stop of stops.reverse()) await stop();
}

async function call(base, method, path, { body, token } = {}) {
  const response = await fetch(base + path, {
    method,
    headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

async function main() {
  let databaseUrl = process.env.BENCH_DATABASE_URL;
  let label = databaseUrl ? 'PostgreSQL (BENCH_DATABASE_URL)' : undefined;
  if (!databaseUrl && !process.env.BENCH_PGLITE) {
    log('starting a throwaway PostgreSQL server');
    const server = await startPostgres();
    if (server) {
      stops.push(async () => server.stop());
      databaseUrl = server.url;
      label = `${server.version.replace('postgres (PostgreSQL) ', 'PostgreSQL ')}, throwaway server on loopback`;
    }
  }
  label ??= 'PGlite in memory (no PostgreSQL installed): health only';
  const env = benchAppEnv(databaseUrl);
  log('starting the marketplace');
  const app = await startService(appDir, env, '/api/v1/health');
  stops.push(() => app.stop());

  const rows = [];
  const health = await load({ url: `${app.base}/api/v1/health`, connections: 10, duration: SECONDS });
  rows.push(
    ['GET /api/v1/health throughput, 10 connections', `${Math.round(health.requests.average)} req/s`, 'baseline', 'info'],
    ['GET /api/v1/health p50 / p97.5 / p99', `${health.latency.p50} / ${health.latency.p97_5} / ${health.latency.p99} ms`, 'baseline', 'info'],
  );

  if (databaseUrl) {
    const password = 'bench-password-1234';
    const registered = await call(app.base, 'POST', '/api/v1/auth/register/client', {
      body: { first_name: 'Bench', last_name: 'Client', email: `bench-${Date.now()}@example.test`, password, password_confirmation: password },
    });
    const token = registered.data.token;
    for (let i = 0; i < VEHICLES; i++) {
      await call(app.base, 'POST', '/api/v1/vehicles', { token, body: { make: 'Renault', model: `Clio ${i + 1}`, year: 2019, fuel: 'diesel', mileage: 84_000 } });
    }
    log('common path: GET /api/v1/vehicles and GET /api/v1/auth/me against the bare endpoint, alternating');
    const bare = await startBareReads('marketplace', env);
    stops.push(() => bare.stop());
    rows.push(
      ...(await measureCommonPath({
        app: app.base,
        bare: bare.base,
        token,
        seconds: COMMON_SECONDS,
        cases: [
          { label: `GET /api/v1/vehicles (${VEHICLES} vehicles)`, appPath: '/api/v1/vehicles', barePath: '/api/v1/vehicles' },
          { label: 'GET /api/v1/auth/me', appPath: '/api/v1/auth/me', barePath: '/api/v1/auth/me' },
        ],
      })),
    );
  }

  const title = `Marketplace bench — ${label}; node ${process.version}, ${availableParallelism()} CPUs; ${new Date().toISOString().slice(0, 16)}Z`;
  const table = printTable(title, rows, ['figure', 'measured', 'target', 'result']);
  const misses = rows.filter((r) => r[3] === 'FAIL').length;
  console.log(`\n${misses === 0 ? 'every target met' : `${misses} figure(s) miss their target`}`);
  writeFileSync(
    resultsFile,
    `# Marketplace bench\n\n${title}\n\n${table}\n\n` +
      `Written by \`pnpm bench\` (apps/marketplace-api/bench/run.mjs) with BENCH_SECONDS=${SECONDS}, BENCH_COMMON_SECONDS=${COMMON_SECONDS}: ` +
      'the common path runs each case twice per side, alternating, after a 1 s warm-up each.\n',
  );
  log(`table written to ${resultsFile}`);
}

try {
  await main();
  await stopAll();
  process.exit(0);
} catch (error) {
  console.error(`[bench] failed: ${error.stack ?? error}`);
  await stopAll();
  process.exit(1);
}
