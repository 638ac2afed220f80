// pnpm bench (marketplace): the floor every route inherits from the shared HTTP stack (the health
// route), and the common read path — bearer token, session lookup, the caller's rows, the envelope —
// against a bare Fastify + postgres.js endpoint doing the same work (scripts/bare-reads.mjs),
// alternating in one run so both see the same machine.
//
// On PostgreSQL: BENCH_DATABASE_URL, or a throwaway server started here (scripts/bench-postgres.mjs);
// without PostgreSQL installed, the health figures on PGlite only.
// Then the lifecycle figures over a data set of BENCH_PRESTATAIRES validated prestataires,
// BENCH_REQUESTS live requests and BENCH_APPOINTMENTS appointments (bench/lifecycle.mjs): upcoming
// slots, search by distance and service, a page of GET /appointments against the bare endpoint,
// and accepting an offer. A latency target is measured with one client in sequence (the service's
// own time, as the log tracker's reads are); the same routes under a saturating load of 10
// connections give their throughput, shown beside it.
// Then the statistics figures (bench/stats.mjs): the admin dashboard's p95, and an export's rate
// and the server's peak RSS growth.
// Then the soak (bench/soak.mjs, scripts/bench-soak.mjs): SOAK_SECONDS (default 600) of the common
// authenticated reads at SOAK_RATE requests/s (default 200) and SOAK_FLOW_RATE write flows a second
// (request → offer → accept → messages), the app's RSS and heap used sampled every 10 s from its
// /metrics; a table per minute and a verdict on memory (last third against the first) and errors.
// Knobs: BENCH_SECONDS (health run, default 10), BENCH_COMMON_SECONDS (each common-path run, default 3),
// BENCH_COMMON_ROUNDS (app/bare pairs per common-path case, default 6),
// BENCH_LIFECYCLE_SECONDS (each lifecycle read run, default 10), BENCH_ONLY (common | idempotency | lifecycle | stats | soak), and the
// sizes in bench/lifecycle.mjs and bench/soak.mjs.
// idempotency: POST /api/v1/vehicles without and with a fresh Idempotency-Key per request, alternated
// rounds of BENCH_COMMON_SECONDS: what the key costs a write (claim and record: two statements).
// Exits non-zero on errors, and when the soak finds memory unstable or any non-2xx answer.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { benchAppEnv, load, measureCommonPath, measureIdempotencyCost, positiveInt, printTable, sequentialLatency, startBareReads, startService } from '../../../scripts/bench-lib.mjs';
import { startPostgres } from '../../../scripts/bench-postgres.mjs';
import { soakApp, soakSettings } from '../../../scripts/bench-soak.mjs';
import { seedLifecycle, seedOffers, sizes, timeEach } from './lifecycle.mjs';
import { setupSoak, siret, soakCases, soakFlow, soakSizes } from './soak.mjs';
import { measureExport, seedStats } from './stats.mjs';

const appDir = fileURLToPath(new URL('..', import.meta.url));
const resultsFile = fileURLToPath(new URL('results.md', import.meta.url));
const SECONDS = positiveInt('BENCH_SECONDS', 10);
const COMMON_SECONDS = positiveInt('BENCH_COMMON_SECONDS', 3);
const COMMON_ROUNDS = positiveInt('BENCH_COMMON_ROUNDS', 6);
const LIFECYCLE_SECONDS = positiveInt('BENCH_LIFECYCLE_SECONDS', 10);
const ONLY = process.env.BENCH_ONLY;
const VEHICLES = 3;
const log = (message) => console.log(`[bench] ${message}`);
// The scrape token the soak reads the app's memory with (/metrics is served in production only behind one).
const METRICS_TOKEN = randomBytes(24).toString('base64url');

const SOAK = soakSettings();

const stops = [];
async function stopAll() {
  for (const stop of stops.reverse()) await stop();
}

/** A write (a vehicle added to the garage) without and with a fresh Idempotency-Key each, side by side. */
async function idempotencyFigures(app, token) {
  log(`idempotency key: POST /api/v1/vehicles without and with a fresh key, ${COMMON_ROUNDS} alternated rounds of ${COMMON_SECONDS} s`);
  const r = await measureIdempotencyCost({
    url: `${app.base}/api/v1/vehicles`,
    headers: { authorization: `Bearer ${token}` },
    body: JSON.stringify({ make: 'Renault', model: 'Clio', year: 2019, fuel: 'diesel', mileage: 84_000 }),
    seconds: COMMON_SECONDS,
    rounds: COMMON_ROUNDS,
    pid: app.pid,
  });
  const reqs = (n) => `${Math.round(n)} req/s`;
  const cpu = r.cpuUs ? `; the app's CPU per request ${Math.round(r.cpuUs.without)} / ${Math.round(r.cpuUs.with)} µs (${((r.cpuUs.ratio - 1) * 100).toFixed(1)} % more)` : '';
  return [
    ['POST /api/v1/vehicles: without Idempotency-Key', reqs(r.without), 'reference', '—'],
    ['POST /api/v1/vehicles: with a fresh Idempotency-Key each', `${reqs(r.with)} (${r.failed} non-2xx/errors)`, 'reference', '—'],
    ['POST /api/v1/vehicles: cost of the Idempotency-Key (1 − with/without)', `${(r.cost * 100).toFixed(1)} % (median of ${r.costs.length} back-to-back pairs: ${r.costs.map((c) => (c * 100).toFixed(1)).join(', ')})${cpu}`, 'informational', r.failed === 0 ? 'info' : 'FAIL'],
  ];
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

/** A latency target, measured with one client in sequence (the service's time, without a queue). */
function latencyRow(label, r, targetMs) {
  return [
    `${label}: p50 / p95 / p99, one client in sequence (${r.n} requests)`,
    `${r.p50.toFixed(1)} / ${r.p95.toFixed(1)} / ${r.p99.toFixed(1)} ms`,
    `p95 ≤ ${targetMs} ms`,
    r.p95 <= targetMs ? 'pass' : 'FAIL',
  ];
}

/** The same route under a saturating load of 10 connections: throughput, and the latency its queue makes. */
function loadRow(label, result) {
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${label}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return [
    `${label}: 10 connections, saturating (p50 / p97.5)`,
    `${Math.round(result.requests.average)} req/s, ${result.latency.p50} / ${result.latency.p97_5} ms`,
    'throughput',
    'info',
  ];
}

/** Rotates a run over several paths, as many clients asking about different things. */
function rotating(paths) {
  let i = 0;
  return [{ method: 'GET', setupRequest: (request) => ({ ...request, path: paths[i++ % paths.length] }) }];
}

/** The lifecycle data set (bench/lifecycle.mjs), written once for the lifecycle and statistics figures. */
async function seedDataSet(databaseUrl, benchClientId) {
  log(`lifecycle data set: ${sizes.prestataires} prestataires, ${sizes.requests} live requests, ${sizes.appointments} appointments, ${sizes.clients} clients`);
  const started = Date.now();
  const seeded = await seedLifecycle(databaseUrl, benchClientId);
  stops.push(() => seeded.sql.end({ timeout: 5 }));
  const row = [`data set written (${sizes.prestataires} / ${sizes.requests} / ${sizes.appointments})`, `${((Date.now() - started) / 1000).toFixed(1)} s`, 'info', 'info'];
  log(row.join(' | '));
  return { seeded, row };
}

/**
 * A prestataire registered, set up and validated through the API as the seeded prestataire `like`
 * is (its base, radius and services), and the token the app issued it: the seeded ones have no
 * password to sign in with.
 */
async function prestataireLike(base, sql, like) {
  const [profile] = await sql`select latitude, longitude, service_radius_km from prestataire_profiles where user_id = ${like}`;
  const offered = await sql`select service_id, price_cents, duration_minutes from prestataire_services where prestataire_id = ${like}`;
  const password = 'bench-password-1234';
  const tag = Date.now().toString(36);
  const registered = await call(base, 'POST', '/api/v1/auth/register/prestataire', {
    body: {
      first_name: 'Bench',
      last_name: 'Garage',
      email: `bench-garage-${tag}@example.test`,
      password,
      password_confirmation: password,
      business_name: `Garage bench ${tag}`,
      siret: siret(95_000 + (Date.now() % 5_000)),
      address: '1 rue du Bench',
      postal_code: '69002',
      city: 'Lyon',
      latitude: profile.latitude,
      longitude: profile.longitude,
    },
  });
  const { token } = registered.data;
  await call(base, 'PUT', '/api/v1/prestataire/profile', { token, body: { service_radius_km: profile.service_radius_km } });
  const services = offered.map((s) => ({ service_id: s.service_id, price_cents: s.price_cents, duration_minutes: s.duration_minutes }));
  await call(base, 'PUT', '/api/v1/prestataire/services', { token, body: { services } });
  await call(base, 'POST', `/api/v1/admin/prestataires/${registered.data.user.id}/validate`, { token: await adminToken(base, sql), body: {} });
  return token;
}

async function lifecycleFigures(app, bare, seeded, benchClientId, token) {
  const rows = [];
  const sample = seeded.prestataireIds.filter((_, i) => i % Math.max(1, Math.floor(seeded.prestataireIds.length / 200)) === 0);

  log('upcoming slots, 14 days');
  const slotPaths = sample.map((id) => `/api/v1/prestataires/${id}/availability/upcoming?days=14`);
  const slotsLabel = 'GET /prestataires/{id}/availability/upcoming?days=14';
  rows.push(latencyRow(slotsLabel, await sequentialLatency(app.base, (i) => slotPaths[i % slotPaths.length]), 10));
  log(rows.at(-1).join(' | '));
  rows.push(loadRow(slotsLabel, await load({ url: app.base, connections: 10, duration: LIFECYCLE_SECONDS, requests: rotating(slotPaths) })));
  log(rows.at(-1).join(' | '));

  log('search by distance and service');
  const points = Array.from({ length: 50 }, (_, i) => {
    const latitude = (44 + (i % 10) * 0.5).toFixed(3);
    const longitude = (0 + Math.floor(i / 10) * 1.2).toFixed(3);
    const service = seeded.serviceIds[i % seeded.serviceIds.length];
    return `/api/v1/prestataires?latitude=${latitude}&longitude=${longitude}&radius_km=30&service_id=${service}&sort=distance`;
  });
  const searchLabel = 'GET /prestataires by distance (30 km) and service, sorted by distance';
  rows.push(latencyRow(searchLabel, await sequentialLatency(app.base, (i) => points[i % points.length]), 20));
  log(rows.at(-1).join(' | '));
  rows.push(loadRow(searchLabel, await load({ url: app.base, connections: 10, duration: LIFECYCLE_SECONDS, requests: rotating(points) })));
  log(rows.at(-1).join(' | '));

  // A prestataire's own lists among every live request: its feed (open requests within its radius
  // for its services, and those aimed at it) and what it may see. Each once tested every request.
  log("a prestataire's feed and visible requests");
  const prestataire = await prestataireLike(app.base, seeded.sql, sample[0]);
  const listed = async (path) => (await call(app.base, 'GET', path, { token: prestataire })).meta.total;
  for (const [what, path] of [
    [`GET /prestataire/requests (a prestataire's feed among ${sizes.requests} live requests`, '/api/v1/prestataire/requests'],
    ['GET /service-requests as a prestataire (what it may see', '/api/v1/service-requests'],
  ]) {
    const label = `${what}: ${await listed(path)} listed)`;
    rows.push(latencyRow(label, await sequentialLatency(app.base, () => path, { token: prestataire }), 20));
    log(rows.at(-1).join(' | '));
  }

  log('GET /api/v1/appointments against the bare endpoint, alternating');
  rows.push(
    ...(await measureCommonPath({
      app: app.base,
      bare: bare.base,
      pids: { app: app.pid, bare: bare.pid },
      token,
      seconds: COMMON_SECONDS,
      rounds: COMMON_ROUNDS,
      cases: [{ label: `GET /api/v1/appointments (a page of the caller's ~${Math.round(sizes.appointments / (sizes.clients + 1))})`, appPath: '/api/v1/appointments', barePath: '/api/v1/appointments' }],
    })),
  );

  // Half the offers accepted one after another (the latency target), the other half 10 at once.
  log(`accepting ${sizes.accepts} offers: half in sequence, half 10 at once`);
  const offers = await seedOffers(seeded.sql, benchClientId, seeded.prestataireIds, seeded.serviceIds, sizes.accepts);
  const half = Math.floor(offers.length / 2);
  const accept = (id) => () => call(app.base, 'POST', `/api/v1/offers/${id}/accept`, { token });
  const one = await timeEach(offers.slice(0, half).map(accept), 1);
  rows.push([
    `POST /offers/{id}/accept (${one.count} offers, one client in sequence): p50 / p95`,
    `${one.p50.toFixed(1)} / ${one.p95.toFixed(1)} ms`,
    'p95 ≤ 30 ms',
    one.p95 <= 30 ? 'pass' : 'FAIL',
  ]);
  log(rows.at(-1).join(' | '));
  const ten = await timeEach(offers.slice(half).map(accept), 10);
  rows.push([
    `POST /offers/{id}/accept (${ten.count} offers, 10 at once): p50 / p95`,
    `${ten.p50.toFixed(1)} / ${ten.p95.toFixed(1)} ms`,
    'under load',
    'info',
  ]);
  log(rows.at(-1).join(' | '));
  return rows;
}

/** An administrator's token: an account registered through the API, then made an administrator in the database. */
async function adminToken(base, sql) {
  const password = 'bench-password-1234';
  const registered = await call(base, 'POST', '/api/v1/auth/register/client', {
    body: { first_name: 'Bench', last_name: 'Admin', email: `bench-admin-${Date.now()}@example.test`, password, password_confirmation: password },
  });
  await sql`update users set role = 'admin' where id = ${registered.data.user.id}`;
  return registered.data.token;
}

/**
 * The statistics figures (issue 19): GET /admin/dashboard one request at a time over the data set,
 * and the export of the appointments created in the last year (≥ 100 000 rows at full size) read by
 * a streaming client, with the server's peak RSS growth sampled from /proc.
 */
async function statsFigures(app, seeded, token) {
  log('statistics: spreading the data set over a year, payments, disputes and reviews');
  const { exportable } = await seedStats(seeded.sql);
  const rows = [];
  log('GET /admin/dashboard, 200 sequential requests after 20 warm-ups');
  rows.push(latencyRow('GET /admin/dashboard', await sequentialLatency(app.base, () => '/api/v1/admin/dashboard', { token }), 50));
  log(rows.at(-1).join(' | '));

  const headers = { authorization: `Bearer ${token}` };
  const to = new Date().toISOString().slice(0, 10);
  const since = (days) => new Date(Date.now() - days * 86_400_000).toISOString().slice(0, 10);
  // One warm-up export (the last 30 days) so the measured ones run compiled code, as a live server does.
  await measureExport(`${app.base}/api/v1/admin/stats/export?dataset=appointments`, headers, app.pid);
  // The target's size: the appointments of half the year (about 100 000 of the data set's 200 000).
  log(`GET /admin/stats/export?dataset=appointments, half of ${exportable} rows, streamed`);
  const exported = await measureExport(`${app.base}/api/v1/admin/stats/export?dataset=appointments&from=${since(182)}&to=${to}`, headers, app.pid);
  const rate = exported.rows / exported.seconds;
  rows.push(
    [
      `GET /admin/stats/export CSV (${exported.rows} appointments): rows/s`,
      `${Math.round(rate)} rows/s (${exported.seconds.toFixed(2)} s)`,
      '≥ 50 000 rows/s',
      rate >= 50_000 ? 'pass' : 'FAIL',
    ],
    [
      `GET /admin/stats/export CSV (${exported.rows} appointments): server peak RSS growth`,
      `${exported.growthMb.toFixed(1)} MB`,
      '≤ 50 MB',
      exported.growthMb <= 50 ? 'pass' : 'FAIL',
    ],
  );
  log(rows.at(-2).join(' | '));
  log(rows.at(-1).join(' | '));
  // Twice as many rows: a bounded stream holds no more for them.
  const whole = await measureExport(`${app.base}/api/v1/admin/stats/export?dataset=appointments&from=${since(364)}&to=${to}`, headers, app.pid);
  rows.push([
    `GET /admin/stats/export CSV, the whole year (${whole.rows} appointments): rate, server peak RSS growth`,
    `${Math.round(whole.rows / whole.seconds)} rows/s, ${whole.growthMb.toFixed(1)} MB`,
    'bounded',
    'info',
  ]);
  log(rows.at(-2).join(' | '));
  log(rows.at(-1).join(' | '));
  return rows;
}

/** The soak: the accounts, then the steady load; prints the table per minute, answers whether it passed. */
async function soakFigures(app, databaseUrl, rows) {
  log(`soak: ${soakSizes.clients} clients and ${soakSizes.prestataires} validated prestataires, through the API`);
  const accounts = await setupSoak((method, path, options) => call(app.base, method, path, options), databaseUrl);
  const cases = soakCases(accounts);
  log(`soak: ${SOAK.seconds} s at ${SOAK.rate} requests/s over ${SOAK.connections} connections and ${SOAK.flowRate} write flows/s; reads: ${cases.map((c) => `${c.label} ${c.weight} %`).join(', ')}`);
  const title = `Marketplace soak — per minute (${SOAK.seconds} s, ${SOAK.rate} requests/s and ${SOAK.flowRate} write flows/s asked; memory: the minute's samples)`;
  const soak = await soakApp({ app, metricsToken: METRICS_TOKEN, title, cases, flows: [soakFlow(accounts)], log, printTable });
  rows.push(...soak.rows);
  return soak.ok;
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
  // /metrics behind a token, as in production: the soak reads the app's memory there.
  const env = { ...benchAppEnv(databaseUrl), METRICS_TOKEN };
  log('starting the marketplace');
  const app = await startService(appDir, env, '/api/v1/health');
  stops.push(() => app.stop());

  const rows = [];
  let soakOk = true;
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
    const bare = await startBareReads('marketplace', env);
    stops.push(() => bare.stop());
    if (!ONLY || ONLY === 'common') {
      for (let i = 0; i < VEHICLES; i++) {
        await call(app.base, 'POST', '/api/v1/vehicles', { token, body: { make: 'Renault', model: `Clio ${i + 1}`, year: 2019, fuel: 'diesel', mileage: 84_000 } });
      }
      log('common path: GET /api/v1/vehicles and GET /api/v1/auth/me against the bare endpoint, alternating');
      rows.push(
        ...(await measureCommonPath({
          app: app.base,
          bare: bare.base,
          pids: { app: app.pid, bare: bare.pid },
          token,
          seconds: COMMON_SECONDS,
          rounds: COMMON_ROUNDS,
          cases: [
            { label: `GET /api/v1/vehicles (${VEHICLES} vehicles)`, appPath: '/api/v1/vehicles', barePath: '/api/v1/vehicles' },
            { label: 'GET /api/v1/auth/me', appPath: '/api/v1/auth/me', barePath: '/api/v1/auth/me' },
          ],
        })),
      );
    }
    if (!ONLY || ONLY === 'idempotency') rows.push(...(await idempotencyFigures(app, token)));
    if (ONLY !== 'common' && ONLY !== 'soak' && ONLY !== 'idempotency') {
      const { seeded, row } = await seedDataSet(databaseUrl, registered.data.user.id);
      rows.push(row);
      if (ONLY !== 'stats') rows.push(...(await lifecycleFigures(app, bare, seeded, registered.data.user.id, token)));
      if (!ONLY || ONLY === 'stats') rows.push(...(await statsFigures(app, seeded, await adminToken(app.base, seeded.sql))));
    }
    if (!ONLY || ONLY === 'soak') soakOk = await soakFigures(app, databaseUrl, rows);
  } else if (!ONLY || ONLY === 'soak') {
    rows.push(['soak', 'n/a: the write flows need PostgreSQL', 'memory stable, 0 non-2xx', '—']);
  }

  const title = `Marketplace bench — ${label}; node ${process.version}, ${availableParallelism()} CPUs; ${new Date().toISOString().slice(0, 16)}Z`;
  const table = printTable(title, rows, ['figure', 'measured', 'target', 'result']);
  const misses = rows.filter((r) => r[3] === 'FAIL').length;
  console.log(`\n${misses === 0 ? 'every target met' : `${misses} figure(s) miss their target`}`);
  if (!soakOk) log('soak: memory unstable or failed requests (see above): exit 1');
  // A partial run (BENCH_ONLY) prints its table and leaves the full run's results as they were.
  if (ONLY) return soakOk ? 0 : 1;
  writeFileSync(
    resultsFile,
    `# Marketplace bench\n\n${title}\n\n${table}\n\n` +
      `Written by \`pnpm bench\` (apps/marketplace-api/bench/run.mjs) with BENCH_SECONDS=${SECONDS}, BENCH_COMMON_SECONDS=${COMMON_SECONDS}, ` +
      `BENCH_LIFECYCLE_SECONDS=${LIFECYCLE_SECONDS}, sizes ${JSON.stringify(sizes)}${ONLY ? `, BENCH_ONLY=${ONLY}` : ''}: ` +
      `the common path runs each case in ${COMMON_ROUNDS} app/bare pairs after a 1 s warm-up each, then 3 times per side at half the app's rate, and reports medians.\n`,
  );
  log(`table written to ${resultsFile}`);
  return soakOk ? 0 : 1;
}

try {
  const code = await main();
  await stopAll();
  process.exit(code);
} catch (error) {
  console.error(`[bench] failed: ${error.stack ?? error}`);
  await stopAll();
  process.exit(1);
}
