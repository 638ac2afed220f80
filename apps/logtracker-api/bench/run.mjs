// pnpm bench (log tracker): the figures of the performance targets, measured on PostgreSQL.
//
//   1. A database: BENCH_DATABASE_URL (it gets the data set: use a scratch database), or a throwaway
//      PostgreSQL server started here (scripts/bench-postgres.mjs), or, when PostgreSQL is not installed or
//      BENCH_PGLITE=1, the embedded PGlite (the targets are for PostgreSQL; a smaller data set).
//   2. The app (`node dist/server.js`) on it; a user, a big project and 4 others, an ingest key.
//   3. The data set, generated server-side with INSERT … SELECT: BENCH_LOGS logs (default 1 000 000)
//      in each of the 5 projects, over 30 days, each day in its own daily partition as on a
//      deployment that has kept them; in time order, the projects' logs interleaved, as logs are
//      shipped (ids grow with time). The app is then restarted, so that its start-up maintenance
//      (rollup compaction) runs before anything is measured, as it would have in production over
//      the days the data stands for; then VACUUM ANALYZE.
//   4. Reads against the big project, before any ingest adds to it: sequential requests on a
//      keep-alive connection, p50/p95/p99 of 200 after 20 warm-ups per case; a slow case stops
//      after BENCH_READ_BUDGET_SECONDS (default 10) with the samples it has.
//   5. Batch ingest with autocannon (1 000 entries per request, 10 connections, BENCH_SECONDS each,
//      default 15, split into BENCH_INGEST_ROUNDS alternated rounds, default 3, each after a 2 s
//      warm-up): a bare Fastify + postgres.js endpoint (bench/bare-server.mjs) inserting into an
//      identically indexed table, then the app with an ingest key; the CPU per batch of each
//      and of the database is logged. Then single logs, one per request, from SINGLE_CONNECTIONS
//      (20) clients, as many rounds of the same length: the bare endpoint inserting each alone,
//      the app storing the requests queued for its writers together (createLogWrites).
//   5b. idempotency: the same batch ingest without and with a fresh Idempotency-Key per request, in
//      alternated rounds (BENCH_COMMON_SECONDS, BENCH_COMMON_ROUNDS): the key's cost, under 5 %.
//   6. Memory: the app's RSS around three 5 MiB batches, after a first one.
//   7. Retention over millions of expired logs (PostgreSQL): the retention CLI runs while clients
//      keep posting batches; the figure is the longest time an insert waited on a lock (pg_locks,
//      sampled), beside the longest time without a batch completing, against the same clients
//      for as long again once retention is done (that one also counts garbage collection pauses
//      and the machine's two cores shared with the deletes).
//   7b. Growth (bench/growth.mjs): a project of its own grown through the batch route to
//      BENCH_GROWTH_LOGS (default 4 000 000), the same reads measured at each size.
//   8. Soak (scripts/bench-soak.mjs): after SOAK_WARMUP_SECONDS (30) of the same load reported
//      apart, SOAK_SECONDS (default 600) of steady mixed traffic at SOAK_RATE requests/s (default
//      200) — batch and single ingest, lists with filters, searches, statistics, insights, health —
//      the app's RSS and heap used sampled every 10 s from its /metrics; a table
//      per minute and a verdict on memory (last third against the first) and errors.
//   8b. Explorer (bench/explorer.mjs): the log explorer page in headless Chromium over the big
//      project: the first page's time from navigation, and frames while scrolling 10 000 lines.
//   9. One table of figures, targets and pass/fail, also written to bench/results.md.
// Exits 0 when a target is missed (it is a measurement), non-zero on errors, and when the soak finds
// memory unstable, any non-2xx answer, or its last minute off its first (throughput or p99) by more than a fifth.
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { benchAppEnv, load, measureCommonPath, measureIdempotencyCost, positiveInt, postgresCpuSeconds, printTable, processCpuSeconds, runNode, startBareReads, startService, timedGet as timedJson } from '../../../scripts/bench-lib.mjs';
import {
  COMMON_TERM,
  INSERT_GENERATED_SQL,
  generatedSlices,
  RARE_TERM,
  insertGeneratedParams,
  makeEntries,
  postgres,
  seededRandom,
} from './dataset.mjs';
import { startPostgres } from '../../../scripts/bench-postgres.mjs';
import { soakApp, soakSettings } from '../../../scripts/bench-soak.mjs';
import { measureGrowth, SIZES as GROWTH_SIZES } from './growth.mjs';
import { measureShip } from './ship.mjs';
import { measureExplorer } from './explorer.mjs';

const appDir = fileURLToPath(new URL('..', import.meta.url));
const resultsFile = fileURLToPath(new URL('results.md', import.meta.url));

const LOGS_PER_PROJECT = positiveInt('BENCH_LOGS', 1_000_000);
const SECONDS = positiveInt('BENCH_SECONDS', 15);
const OTHER_PROJECTS = 4;
const LOAD_CHUNK = 200_000;
const LOAD_WORKERS = 2;
const BATCH_ENTRIES = 1000;
const CONNECTIONS = 10;
// Single logs, one per request (an app logging as it goes), from this many clients at once: enough
// for requests to queue for the instance's writers, which then store them together.
const SINGLE_CONNECTIONS = 20;
const WARMUP_SECONDS = 2;
// Batch ingest: the bare endpoint and the app alternate, this many rounds each (see measureIngest).
const INGEST_ROUNDS = positiveInt('BENCH_INGEST_ROUNDS', 3);
const READ_SAMPLES = 200;
const READ_WARMUP = 20;
// A slow case stops early (with the samples it has, shown as n) so that the run stays short.
const READ_BUDGET_MS = positiveInt('BENCH_READ_BUDGET_SECONDS', 10) * 1000;
const MIN_SAMPLES = 10;
const DEEP_PAGES = 50;
const DEEP_MEASURED_AFTER = 20;
const MEMORY_BATCHES = 3;
const MEMORY_BATCH_BYTES = 5 * 1024 * 1024;
const MEMORY_TARGET_MULTIPLE = 4;
// On PGlite the data goes through the API, which is slow: a smaller set, in the big project only.
const PGLITE_MAX_LOGS = 100_000;

// BENCH_ONLY=ingest,memory (any of reads, ingest, idempotency, memory, retention, burst, analyse, growth, common, soak, ship, explorer) runs those phases alone,
// without the data set when reads and retention are left out, and prints the table without
// writing results.md.
const PHASES = ['reads', 'ingest', 'idempotency', 'memory', 'retention', 'burst', 'analyse', 'growth', 'common', 'soak', 'ship', 'explorer'];
const ONLY = new Set((process.env.BENCH_ONLY || PHASES.join(',')).split(',').map((p) => p.trim()));
for (const phase of ONLY) if (!PHASES.includes(phase)) throw new Error(`BENCH_ONLY: unknown phase "${phase}" (${PHASES.join(', ')})`);
const PARTIAL = PHASES.some((p) => !ONLY.has(p));

const TARGETS = { idempotencyCost: 0.05, ingest: 40_000, ratio: 1.0, listP95: 20, getP95: 5, statsP95: 20, retentionLockWaitMs: 10, burstSearchP95: 20, analyseSeconds: 15 };

// Search right after a burst: BENCH_BURST_LOGS logs (default 300 000) posted into a new project in
// 1 000-entry batches by BURST_CLIENTS clients, timestamps over the last hour, then the searches
// people run during an incident, BURST_SETTLE_MS after the last batch, with no manual step between.
const BURST_LOGS = positiveInt('BENCH_BURST_LOGS', 300_000);
const BURST_CLIENTS = 4;
const BURST_SETTLE_MS = 3000;
const BURST_SAMPLES = 100;

// The common read path (auth hook, session lookup, query, serialisation) against a bare Fastify +
// postgres.js endpoint doing the same work: BENCH_COMMON_ROUNDS app/bare pairs of BENCH_COMMON_SECONDS
// each, then three runs each at half the app's rate (the p99 of a request rather than of a full queue).
const COMMON_SECONDS = positiveInt('BENCH_COMMON_SECONDS', 3);
const COMMON_ROUNDS = positiveInt('BENCH_COMMON_ROUNDS', 6);

// Analysis: BENCH_ANALYSE_LOGS logs (default 1 000 000) of the last 24 hours in a project of their
// own, loaded server-side, then one POST /analyze over 24 h: mining, and the pattern of every log.
const ANALYSE_LOGS = positiveInt('BENCH_ANALYSE_LOGS', 1_000_000);

// Soak: SOAK_SECONDS, SOAK_WARMUP_SECONDS, SOAK_RATE, SOAK_CONNECTIONS (scripts/bench-soak.mjs); batches of SOAK_BATCH_ENTRIES.
const SOAK = soakSettings();
const SOAK_BATCH_ENTRIES = 100;
// The scrape token the soak reads the app's memory with (/metrics is served in production only behind one).
const METRICS_TOKEN = randomBytes(24).toString('base64url');

// The log tracker's tables live in its own schema (docs/operations.md: one database for both apps).
const LOGTRACKER_SEARCH_PATH = '"logtracker", public';

// Retention: the big project keeps 20 days and the others 7, so that the oldest 10 days expire for
// every project (emptied and dropped whole) and 13 more for the others only (deleted row by row);
// meanwhile RETENTION_PROBE_CLIENTS clients each post a RETENTION_PROBE_ENTRIES-entry batch every
// RETENTION_PROBE_PERIOD_MS (10 000 logs/s in all: steady traffic, with room left on the machine,
// so that a stall shows as one rather than as a queue). At 20 000 logs/s the instance answered
// 150 of the 200 batches a second asked even without retention, the 2 CPUs idle 0–8 % of the
// time: a queue on a saturated machine, where a lock's holder waits for a CPU and every wait on it
// grows with the run queue. The table shows the rate answered beside the rate asked.
const RETENTION_DAYS = { big: 20, others: 7 };
const RETENTION_PROBE_CLIENTS = 4;
const RETENTION_PROBE_ENTRIES = 100;
const RETENTION_PROBE_PERIOD_MS = 40;
const RETENTION_QUIET_MAX_MS = 60_000;
const LOCK_POLL_MS = 2;


const fmt = (n) => Math.round(n).toLocaleString('en').replace(/,/g, ' ');
const ms = (n) => (n < 10 ? n.toFixed(2) : n.toFixed(1));
const mib = (bytes) => (bytes / 1024 / 1024).toFixed(1);
const seconds = (start) => ((performance.now() - start) / 1000).toFixed(1);
const pass = (ok) => (ok ? 'pass' : 'FAIL');
const log = (message) => console.log(`[bench] ${message}`);

// --- clean-up, also on failure and Ctrl-C -------------------------------------------------------
// Each entry is synchronous (kill a child, stop PostgreSQL), so it can run from a signal handler.
const cleanups = new Map();
function cleanupAll() {
  for (const [name, fn] of [...cleanups].reverse()) {
    cleanups.delete(name);
    try {
      fn();
    } catch (error) {
      console.error(`[bench] clean-up of ${name} failed: ${error.message}`);
    }
  }
}
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
]) {
  process.on(signal, () => {
    console.error(`\n[bench] ${signal}: stopping what the bench started`);
    cleanupAll();
    process.exit(code);
  });
}
process.on('exit', cleanupAll);

function killOnCleanup(name, pid) {
  cleanups.set(name, () => {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // already gone
    }
  });
}

async function stopService(name, service) {
  cleanups.delete(name);
  await service.stop();
}

// --- HTTP helpers --------------------------------------------------------------------------------
async function call(base, method, path, { body, token, headers = {} } = {}) {
  const response = await fetch(base + path, {
    method,
    headers: {
      ...(body ? { 'content-type': 'application/json' } : {}),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}

function percentiles(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
  return { n: sorted.length, p50: at(0.5), p95: at(0.95), p99: at(0.99) };
}

/** One timed GET (bench-lib's lean client), body read and parsed; throws on a non-2xx answer. */
const timedGet = (base, path, token) => timedJson(base + path, token);

/**
 * Sequential latency loop: `warmup` requests, then `samples` timed ones; a slow case warms up for
 * at most a quarter of READ_BUDGET_MS (at least 3 requests) and stops timing when the budget is
 * spent (at least MIN_SAMPLES). `pathAt(i)` may vary the request.
 */
async function latency(base, token, pathAt, { samples = READ_SAMPLES, warmup = READ_WARMUP } = {}) {
  const start = performance.now();
  let first;
  for (let i = 0; i < warmup; i++) {
    first ??= (await timedGet(base, pathAt(i), token)).body;
    if (i >= 2 && performance.now() - start > READ_BUDGET_MS / 4) break;
  }
  const times = [];
  for (let i = 0; i < samples; i++) {
    const { elapsed, body } = await timedGet(base, pathAt(warmup + i), token);
    first ??= body;
    times.push(elapsed);
    if (times.length >= MIN_SAMPLES && performance.now() - start > READ_BUDGET_MS) break;
  }
  return { ...percentiles(times), first };
}

/**
 * Follows `meta.next_cursor` from the first page to page DEEP_PAGES, again and again, timing the
 * fetches of the pages beyond DEEP_MEASURED_AFTER until READ_SAMPLES are timed or the budget is
 * spent. The first walk only warms up, unless it alone took a quarter of the budget.
 */
async function deepWalk(base, token, pathWith) {
  const start = performance.now();
  const deadline = start + READ_BUDGET_MS;
  const times = [];
  for (let walk = 1; ; walk++) {
    const walkTimes = [];
    let { body } = await timedGet(base, pathWith(''), token);
    let page = 1;
    while (page < DEEP_PAGES) {
      if (!body.meta || !('next_cursor' in body.meta)) return { cursorless: true };
      if (!body.meta.next_cursor) return { pages: page };
      const r = await timedGet(base, pathWith(`cursor=${encodeURIComponent(body.meta.next_cursor)}`), token);
      body = r.body;
      page++;
      if (page > DEEP_MEASURED_AFTER) walkTimes.push(r.elapsed);
      if (times.length + walkTimes.length >= MIN_SAMPLES && performance.now() > deadline) break;
    }
    const warmUp = walk === 1 && performance.now() - start < READ_BUDGET_MS / 4;
    if (!warmUp) times.push(...walkTimes);
    if (times.length >= READ_SAMPLES || (times.length >= MIN_SAMPLES && performance.now() > deadline)) {
      return { pages: DEEP_PAGES, times: times.slice(0, READ_SAMPLES) };
    }
  }
}

/** "p50 … / p95 … / p99 … ms", with the number of samples when the budget cut the case short. */
function describe(r, wanted = READ_SAMPLES) {
  return `p50 ${ms(r.p50)} / p95 ${ms(r.p95)} / p99 ${ms(r.p99)} ms${r.n < wanted ? ` (n=${r.n})` : ''}`;
}

// --- the database --------------------------------------------------------------------------------
async function openDatabase() {
  if (process.env.BENCH_DATABASE_URL) {
    return { kind: 'postgres', url: process.env.BENCH_DATABASE_URL, label: 'PostgreSQL (BENCH_DATABASE_URL)' };
  }
  let server;
  if (!process.env.BENCH_PGLITE) {
    log('starting a throwaway PostgreSQL server');
    server = await startPostgres();
    if (!server) log('PostgreSQL is not installed (no pg_ctl/initdb on PATH or in /usr/lib/postgresql/*/bin)');
  }
  if (!server) {
    log('running on PGlite, inside the app process;');
    log('the targets are for PostgreSQL, so read the PGlite figures as indications only');
    return { kind: 'pglite', label: 'PGlite in memory — NOT PostgreSQL, the targets are for PostgreSQL' };
  }
  cleanups.set('postgres', server.stop);
  log(`${server.version} on ${server.url}`);
  return { kind: 'postgres', url: server.url, label: `${server.version.replace('postgres (PostgreSQL) ', 'PostgreSQL ')}, throwaway server on loopback` };
}

/**
 * The growth phase's reference (growth.mjs, measureGrowth): an instance of the app, maintenance
 * every minute as the growing one's, on a database of its own on the same server, and a user of
 * it; undefined where that database cannot be created (a BENCH_DATABASE_URL whose role may not),
 * the growth then judged on its first size measured minutes before. Dropped by `stop`.
 */
async function growthReference(sql, databaseUrl, appEnv) {
  const url = new URL(databaseUrl);
  const name = `${decodeURIComponent(url.pathname.slice(1)) || 'postgres'}_growth_reference`;
  try {
    await sql.unsafe(`drop database if exists "${name}"`);
    await sql.unsafe(`create database "${name}"`);
  } catch (error) {
    log(`growth: no reference database (${error.message}): the growth is judged on its first size`);
    return undefined;
  }
  url.pathname = `/${name}`;
  const instance = await startService(appDir, { ...appEnv, DATABASE_URL: url.href, MAINTENANCE_INTERVAL_SECONDS: '60' }, '/api/health');
  killOnCleanup('growth reference', instance.pid);
  const own = postgres(url.href, { max: 1, onnotice: () => {}, connection: { search_path: LOGTRACKER_SEARCH_PATH } });
  const password = 'bench-password-1234';
  const registered = await call(instance.base, 'POST', '/api/auth/register', {
    body: { name: 'Bench', email: `bench-reference-${Date.now()}@example.test`, password, password_confirmation: password },
  });
  return {
    name,
    base: instance.base,
    token: registered.data.token,
    sql: own,
    stop: async () => {
      await stopService('growth reference', instance);
      await own.end({ timeout: 1 });
      await sql.unsafe(`drop database if exists "${name}"`);
    },
  };
}

/** Waits until no other client of the database is running a statement (the app's start-up jobs). */
async function waitForQuiet(sql, timeoutMs = 180_000, { autovacuum = false, also = [] } = {}) {
  const deadline = Date.now() + timeoutMs;
  const kinds = autovacuum ? ['client backend', 'autovacuum worker'] : ['client backend'];
  let quiet = 0;
  while (quiet < 5 && Date.now() < deadline) {
    const [{ busy }] = await sql`
      select count(*)::int as busy from pg_stat_activity
       where (datname = current_database() or datname = any(${also}::text[]) or backend_type = 'autovacuum worker') and pid <> pg_backend_pid()
         and backend_type = any(${kinds}) and coalesce(state, 'active') not in ('idle')`;
    quiet = busy === 0 ? quiet + 1 : 0;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Waits until the kernel holds less than 64 MiB of pages to write (/proc/meminfo: Dirty and
 * Writeback), at most `timeoutMs`; answers the KiB left, or undefined where it cannot tell.
 */
async function waitForWrittenOut(timeoutMs) {
  const pending = () => {
    try {
      const info = readFileSync('/proc/meminfo', 'utf8');
      const kib = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(info)?.[1] ?? NaN);
      const sum = kib('Dirty') + kib('Writeback');
      return Number.isFinite(sum) ? sum : undefined;
    } catch {
      return undefined;
    }
  };
  const deadline = Date.now() + timeoutMs;
  for (let left = pending(); ; left = pending()) {
    if (left === undefined || left < 64 * 1024 || Date.now() >= deadline) return left;
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * Generates the data set server-side, in time order with the projects' logs interleaved (as they
 * arrive), LOAD_WORKERS statements at a time, each at most LOAD_CHUNK rows and six hours.
 */
async function loadWithSql(sql, projectIds) {
  const total = LOGS_PER_PROJECT * projectIds.length;
  const tasks = generatedSlices(total, 30, LOAD_CHUNK);
  const start = performance.now();
  let done = 0;
  const worker = async () => {
    for (let task = tasks.shift(); task; task = tasks.shift()) {
      const [first, last] = task;
      await sql.unsafe(INSERT_GENERATED_SQL, insertGeneratedParams(projectIds, first, last, total));
      done += last - first + 1;
      if (tasks.length % 10 === 0) log(`  ${fmt(done)} / ${fmt(total)} logs (${seconds(start)} s)`);
    }
  };
  await Promise.all(Array.from({ length: LOAD_WORKERS }, worker));
  return { total, insertSeconds: (performance.now() - start) / 1000 };
}

/** PGlite lives inside the app: the data set goes through the batch endpoint. */
async function loadWithApi(base, projectId, ingestKey, count) {
  const start = performance.now();
  const random = seededRandom(7);
  for (let sent = 0; sent < count; sent += BATCH_ENTRIES) {
    const logs = makeEntries(Math.min(BATCH_ENTRIES, count - sent), { random, spreadMs: 30 * 86_400_000 });
    await call(base, 'POST', `/api/projects/${projectId}/logs/batch`, { body: { logs }, headers: { 'x-ingest-key': ingestKey } });
    if ((sent / BATCH_ENTRIES) % 20 === 19) log(`  ${fmt(sent + BATCH_ENTRIES)} / ${fmt(count)} logs (${seconds(start)} s)`);
  }
  return { total: count, insertSeconds: (performance.now() - start) / 1000 };
}

/** The bare endpoint's table: the columns, check and indexes of `logs` (LIKE … INCLUDING ALL copies no triggers, foreign keys nor partitioning). */
async function createBareTable(sql) {
  await sql`drop table if exists bench_bare_logs`;
  await sql`create table bench_bare_logs (like logs including all)`;
  const indexes = async (table) =>
    (await sql`select indexdef from pg_indexes where schemaname = current_schema() and tablename = ${table} order by indexname`).map((r) =>
      r.indexdef.replace(/^CREATE (UNIQUE )?INDEX \S+ ON (ONLY )?\S+/, '').trim(),
    );
  const [app, bare] = [await indexes('logs'), await indexes('bench_bare_logs')];
  const missing = app.filter((def) => !bare.includes(def));
  if (missing.length > 0) throw new Error(`bench_bare_logs lacks indexes of logs: ${missing.join('; ')}`);
  log(`bench_bare_logs: ${bare.length} indexes like logs (${bare.map((d) => d.replace(/^USING (\w+).*/, '$1')).join(', ')})`);
}

// --- the phases ----------------------------------------------------------------------------------
/**
 * The same sequential loop against the app and a bare reference at once: each request to one, then
 * the same to the other (which goes first alternates), so that both meet the machine as it is at
 * that moment. Answers the two sets of percentiles.
 */
async function pairedLatency(bases, token, pathAt, { samples = READ_SAMPLES, warmup = READ_WARMUP } = {}) {
  const times = { app: [], bare: [] };
  for (let i = 0; i < warmup + samples; i++) {
    const path = pathAt(i);
    const order = i % 2 === 0 ? ['app', 'bare'] : ['bare', 'app'];
    for (const side of order) {
      const { elapsed } = await timedGet(bases[side], path, token);
      if (i >= warmup) times[side].push(elapsed);
    }
  }
  return { app: percentiles(times.app), bare: percentiles(times.bare) };
}

async function measureReads(base, token, projectId, knownTotal, { bareEnv } = {}) {
  const rows = [];
  const list = (query) => `/api/projects/${projectId}/logs${query ? `?${query}` : ''}`;
  const now = Date.now();
  const last24h = `from_date=${encodeURIComponent(new Date(now - 86_400_000).toISOString())}&to_date=${encodeURIComponent(new Date(now).toISOString())}`;

  const listCases = [
    ['no filter', ''],
    ['level=error', 'level=error'],
    [`search=${RARE_TERM} (rare)`, `search=${RARE_TERM}`],
    [`search=${COMMON_TERM} (common)`, `search=${COMMON_TERM}`],
    [`level=error + search=${COMMON_TERM}`, `level=error&search=${COMMON_TERM}`],
    ['from_date/to_date (last 24 h)', last24h],
    [`level=warning + last 24 h + search=${COMMON_TERM}`, `level=warning&${last24h}&search=${COMMON_TERM}`],
  ];
  let firstMeta;
  for (const [name, query] of listCases) {
    const label = `list, first page: ${name}`;
    try {
      const r = await latency(base, token, () => list(query));
      const meta = r.first.meta ?? {};
      firstMeta ??= meta;
      const estimate = meta.total_is_estimate === true || meta.total_exact === false;
      const matches = meta.total === undefined ? '' : `, total ${estimate ? '≈ ' : ''}${fmt(meta.total)}`;
      rows.push([`${label}${matches}`, describe(r), `p95 ≤ ${TARGETS.listP95} ms`, pass(r.p95 <= TARGETS.listP95)]);
    } catch (error) {
      rows.push([label, `error: ${error.message}`, `p95 ≤ ${TARGETS.listP95} ms`, 'FAIL']);
    }
    log(`  ${rows.at(-1)[0]}: ${rows.at(-1)[1]}`);
  }

  // meta.total: exact, or said to be an estimate.
  if (firstMeta) {
    const flag =
      'total_is_estimate' in firstMeta
        ? `total_is_estimate=${firstMeta.total_is_estimate}`
        : 'total_exact' in firstMeta
          ? `total_exact=${firstMeta.total_exact}`
          : 'no estimate flag in meta';
    const exact = firstMeta.total === knownTotal;
    const estimated = firstMeta.total_is_estimate === true || firstMeta.total_exact === false;
    const error = knownTotal ? ` (${((firstMeta.total / knownTotal - 1) * 100).toFixed(1)} % off)` : '';
    rows.push([
      `meta.total, no filter (actual ${fmt(knownTotal)})`,
      `${fmt(firstMeta.total)}, ${flag}${exact ? ', exact' : estimated ? error : ''}`,
      'exact, or marked as an estimate',
      pass(exact || estimated),
    ]);
    log(`  ${rows.at(-1)[0]}: ${rows.at(-1)[1]}`);
  }

  // Deep pages with the cursor the list gives, measured beyond page DEEP_MEASURED_AFTER.
  for (const [name, query] of [
    ['no filter', ''],
    ['level=error', 'level=error'],
    [`search=${COMMON_TERM}`, `search=${COMMON_TERM}`],
  ]) {
    const label = `list, cursor pages ${DEEP_MEASURED_AFTER + 1}–${DEEP_PAGES}: ${name}`;
    try {
      const walk = await deepWalk(base, token, (extra) => list([query, extra].filter(Boolean).join('&')));
      if (walk.cursorless) {
        rows.push([label, 'no cursor paging (meta has no next_cursor)', `p95 ≤ ${TARGETS.listP95} ms`, 'FAIL']);
      } else if (walk.pages < DEEP_PAGES) {
        rows.push([label, `only ${walk.pages} pages of data`, `p95 ≤ ${TARGETS.listP95} ms`, '—']);
      } else {
        const r = percentiles(walk.times);
        rows.push([label, describe(r), `p95 ≤ ${TARGETS.listP95} ms`, pass(r.p95 <= TARGETS.listP95)]);
      }
    } catch (error) {
      rows.push([label, `error: ${error.message}`, `p95 ≤ ${TARGETS.listP95} ms`, 'FAIL']);
    }
    log(`  ${rows.at(-1)[0]}: ${rows.at(-1)[1]}`);
  }

  // Offset paging as deep as it goes (the 10 000th log: MAX_OFFSET_WINDOW), and one page past it,
  // which answers 422 pointing to the cursor.
  const deepPage = Math.max(1, Math.min(200, Math.floor(knownTotal / 50)));
  try {
    const r = await latency(base, token, () => list(`page=${deepPage}&per_page=50`), { samples: 50, warmup: 5 });
    rows.push([`list, page=${deepPage}&per_page=50 (offset paging, the deepest page)`, describe(r, 50), `p95 ≤ ${TARGETS.listP95} ms`, pass(r.p95 <= TARGETS.listP95)]);
  } catch (error) {
    rows.push([`list, page=${deepPage}&per_page=50 (offset paging, the deepest page)`, `error: ${error.message}`, `p95 ≤ ${TARGETS.listP95} ms`, 'FAIL']);
  }
  log(`  ${rows.at(-1)[0]}: ${rows.at(-1)[1]}`);
  const beyond = await fetch(`${base}${list('page=2000&per_page=50')}`, { headers: { authorization: `Bearer ${token}` } });
  rows.push(['list, page=2000&per_page=50 (past the offset window)', `${beyond.status}: ${(await beyond.json()).message ?? ''}`.slice(0, 160), '422, pointing to the cursor', pass(beyond.status === 422)]);
  log(`  ${rows.at(-1)[0]}: ${rows.at(-1)[1]}`);

  // GET /api/logs/{id} of random logs of the project, collected from pages of 500 ending at random
  // times of the data set's 30 days (pages by number stop at the 10 000th log).
  try {
    const ids = [];
    const random = seededRandom(3);
    for (let i = 0; i < 5; i++) {
      const before = new Date(Date.now() - Math.floor(random() * 30 * 86_400_000)).toISOString();
      const { body } = await timedGet(base, list(`per_page=500&to_date=${encodeURIComponent(before)}`), token);
      ids.push(...body.data.map((row) => row.id));
    }
    if (ids.length === 0) throw new Error('no logs to read');
    const byId = () => `/api/logs/${ids[Math.floor(random() * ids.length)]}`;
    if (bareEnv) {
      // Beside the least a Node service does for it (scripts/bare-reads.mjs: the same JWT check, the
      // session, the log and its pattern in one statement probing every daily partition by the
      // id), request by request: two round trips to PostgreSQL without the app's partition ids.
      const bare = await startBareReads('logtracker', bareEnv);
      killOnCleanup('bare reads', bare.pid);
      try {
        const r = await pairedLatency({ app: base, bare: bare.base }, token, byId);
        rows.push(['GET /api/logs/{id}, random ids', describe(r.app), `p95 ≤ ${TARGETS.getP95} ms`, pass(r.app.p95 <= TARGETS.getP95)]);
        log(`  ${rows.at(-1)[0]}: ${rows.at(-1)[1]}`);
        rows.push(['GET /api/logs/{id}, the same ids from a bare Fastify + postgres.js, alternating', describe(r.bare), 'reference', '—']);
      } finally {
        await stopService('bare reads', bare);
      }
    } else {
      const r = await latency(base, token, byId);
      rows.push(['GET /api/logs/{id}, random ids', describe(r), `p95 ≤ ${TARGETS.getP95} ms`, pass(r.p95 <= TARGETS.getP95)]);
    }
  } catch (error) {
    rows.push(['GET /api/logs/{id}, random ids', `error: ${error.message}`, `p95 ≤ ${TARGETS.getP95} ms`, 'FAIL']);
  }
  log(`  ${rows.at(-1)[0]}: ${rows.at(-1)[1]}`);

  for (const range of ['1h', '24h', '7d', '30d']) {
    const label = `statistics, time_range=${range}`;
    try {
      const r = await latency(base, token, () => `/api/projects/${projectId}/stats?time_range=${range}`);
      const total = r.first.data?.total;
      rows.push([`${label}${total === undefined ? '' : ` (${fmt(total)} logs)`}`, describe(r), `p95 ≤ ${TARGETS.statsP95} ms`, pass(r.p95 <= TARGETS.statsP95)]);
    } catch (error) {
      rows.push([label, `error: ${error.message}`, `p95 ≤ ${TARGETS.statsP95} ms`, 'FAIL']);
    }
    log(`  ${rows.at(-1)[0]}: ${rows.at(-1)[1]}`);
  }
  return rows;
}

/**
 * Batch ingest against one endpoint, with the CPU its process and the local PostgreSQL spent per
 * batch: on one machine, where the two share the cores, what each side costs.
 */
async function ingest(name, url, headers, body, pid, { seconds = SECONDS, warmup = WARMUP_SECONDS } = {}) {
  const options = { url, method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body, connections: CONNECTIONS };
  await load({ ...options, duration: warmup });
  const [serviceBefore, databaseBefore] = [processCpuSeconds(pid), postgresCpuSeconds()];
  const r = await load({ ...options, duration: seconds });
  const perBatchMs = (cpuSeconds) => ((cpuSeconds * 1000) / Math.max(1, r.requests.total)).toFixed(1);
  const cpu = `CPU per batch: service ${perBatchMs(processCpuSeconds(pid) - serviceBefore)} ms, database ${perBatchMs(postgresCpuSeconds() - databaseBefore)} ms`;
  const stored = r['2xx'] * BATCH_ENTRIES;
  const elapsed = r.duration || seconds;
  const logsPerSecond = stored / elapsed;
  const failed = r.non2xx + r.errors + r.timeouts;
  const failures = failed === 0 ? '' : ` (statuses ${JSON.stringify(r.statusCodeStats)}, ${r.errors} errors, ${r.timeouts} timeouts)`;
  log(`  ${name}: ${fmt(logsPerSecond)} logs/s, ${fmt(r['2xx'])} batches, ${failed} failed${failures}, latency p50 ${r.latency.p50} / p99 ${r.latency.p99} ms; ${cpu}`);
  return { logsPerSecond, stored, elapsed, failed, result: r };
}

/** Rounds of one endpoint taken together: logs stored over the time measured. */
function overall(rounds) {
  const stored = rounds.reduce((sum, r) => sum + r.stored, 0);
  const elapsed = rounds.reduce((sum, r) => sum + r.elapsed, 0);
  return { logsPerSecond: stored / elapsed, failed: rounds.reduce((sum, r) => sum + r.failed, 0) };
}

function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/** A batch just under MEMORY_BATCH_BYTES (the app's default limit) of 5 000 entries with long messages. */
function bigBatch(seed) {
  const entries = 5000;
  const wanted = MEMORY_BATCH_BYTES - 8 * 1024;
  let padTo = Math.floor(wanted / entries) - 200;
  for (let attempt = 0; ; attempt++) {
    const body = JSON.stringify({ logs: makeEntries(entries, { random: seededRandom(seed), padTo }) });
    const size = Buffer.byteLength(body);
    if ((size <= wanted && size > wanted - 64 * 1024) || (size <= wanted && attempt > 5)) return body;
    padTo += Math.floor((wanted - size) / entries) - (size > wanted ? 1 : 0);
  }
}

async function measureMemory(service, projectId, ingestKey) {
  const bodies = Array.from({ length: MEMORY_BATCHES }, (_, i) => bigBatch(100 + i));
  const size = Buffer.byteLength(bodies[0]);
  // One batch first, unmeasured: the first big body of a process also sizes its heap for the
  // next ones, and the figure is what each batch costs a running service.
  await call(service.base, 'POST', `/api/projects/${projectId}/logs/batch`, { body: bigBatch(99), headers: { 'x-ingest-key': ingestKey } });
  await new Promise((r) => setTimeout(r, 1000));
  const before = memoryOf(service.pid);
  // Resets the peak (VmHWM) to the current RSS, so the peak read afterwards is the batches' own.
  let peakReset = true;
  try {
    writeFileSync(`/proc/${service.pid}/clear_refs`, '5');
  } catch {
    peakReset = false;
  }
  for (const body of bodies) {
    await call(service.base, 'POST', `/api/projects/${projectId}/logs/batch`, { body, headers: { 'x-ingest-key': ingestKey } });
  }
  const after = memoryOf(service.pid);
  const peak = peakReset ? Math.max(after.hwm, after.rss) : after.rss;
  const growth = peak - before.rss;
  return {
    row: [
      `memory: RSS growth over ${MEMORY_BATCHES} batches of ${mib(size)} MiB (5 000 entries) after a first one${peakReset ? ', at peak' : ''}`,
      `${growth < 0 ? '−' : '+'}${mib(Math.abs(growth))} MiB = ${(Math.max(0, growth) / size).toFixed(1)}× the batch (RSS ${mib(before.rss)} → peak ${mib(peak)} → ${mib(after.rss)} MiB)`,
      `≤ ${MEMORY_TARGET_MULTIPLE}× the batch`,
      pass(growth <= MEMORY_TARGET_MULTIPLE * size),
    ],
  };
}

/** A burst batch: one log in three says "timeout", the rest are other incidents of a gateway. */
function burstBatch(batch, now) {
  return JSON.stringify({
    logs: Array.from({ length: BATCH_ENTRIES }, (_, i) => {
      const n = batch * BATCH_ENTRIES + i;
      const node = `node-${n % 7}`;
      const request = (n * 2654435761 % 2 ** 32).toString(36);
      const message =
        n % 3 === 0
          ? `timeout gateway for request ${request} after ${n % 997} ms on ${node} (cache miss)`
          : n % 3 === 1
            ? `upstream reset by peer for request ${request} on ${node} after ${n % 89} retries`
            : `slow response from billing for request ${request}: ${n % 4000} ms on ${node}`;
      return {
        level: n % 10 === 0 ? 'warning' : n % 25 === 0 ? 'error' : 'info',
        message,
        source: `gateway-${n % 3}`,
        timestamp: new Date(now - (n % 3_600_000)).toISOString(),
      };
    }),
  });
}

/**
 * Search right after a burst of ingest into a new project: the four searches of an incident,
 * timed from BURST_SETTLE_MS after the last batch, with nothing run in between (no ANALYZE).
 */
async function measureBurst(rows, { base, token }) {
  const project = (await call(base, 'POST', '/api/projects', { body: { name: `bench-burst-${Date.now()}` }, token })).data.id;
  const key = (await call(base, 'POST', `/api/projects/${project}/ingest-keys`, { body: { name: 'burst' }, token })).data.key;
  const batches = Math.max(1, Math.round(BURST_LOGS / BATCH_ENTRIES));
  const now = Date.now();
  log(`burst: ${fmt(batches * BATCH_ENTRIES)} logs into a new project, ${BURST_CLIENTS} clients of ${fmt(BATCH_ENTRIES)}-entry batches`);
  const start = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: BURST_CLIENTS }, async () => {
      for (let batch = next++; batch < batches; batch = next++) {
        await call(base, 'POST', `/api/projects/${project}/logs/batch`, { body: burstBatch(batch, now), headers: { 'x-ingest-key': key } });
      }
    }),
  );
  // One log holds a token no other does.
  await call(base, 'POST', `/api/projects/${project}/logs`, {
    body: { level: 'error', message: 'payment failed for order zq8xv3kd7 after capture' },
    headers: { 'x-ingest-key': key },
  });
  const ingestSeconds = (performance.now() - start) / 1000;
  rows.push([
    'burst ingest into a new project (informational)',
    `${fmt(batches * BATCH_ENTRIES)} logs in ${ingestSeconds.toFixed(1)} s (${fmt((batches * BATCH_ENTRIES) / ingestSeconds)} logs/s)`,
    `${BURST_CLIENTS} clients, ${fmt(BATCH_ENTRIES)}-entry batches`,
    'info',
  ]);
  await new Promise((resolve) => setTimeout(resolve, BURST_SETTLE_MS));
  const hourAgo = encodeURIComponent(new Date(now - 3_600_000).toISOString());
  const cases = [
    ['search=timeout (a third of the logs)', 'search=timeout'],
    ['a search that matches nothing', 'search=kq7zzv0notthere'],
    ['a token held by one log', 'search=zq8xv3kd7'],
    ['search=gateway&level=warning&from_date=<1 h ago>', `search=gateway&level=warning&from_date=${hourAgo}`],
  ];
  for (const [label, query] of cases) {
    const r = await latency(base, token, () => `/api/projects/${project}/logs?${query}`, { samples: BURST_SAMPLES, warmup: 3 });
    rows.push([
      `search ${BURST_SETTLE_MS / 1000} s after the burst: ${label}`,
      describe(r, BURST_SAMPLES),
      `p95 ≤ ${TARGETS.burstSearchP95} ms`,
      pass(r.p95 <= TARGETS.burstSearchP95),
    ]);
  }
}

/**
 * POST /analyze over ANALYSE_LOGS logs of the last 24 hours, none of them mined yet: the time the
 * client waits, and a check that every log of the range came back with its pattern.
 */
async function measureAnalyse(rows, { sql, base, token }) {
  const project = (await call(base, 'POST', '/api/projects', { body: { name: `bench-analyse-${Date.now()}` }, token })).data.id;
  log(`analyse: loading ${fmt(ANALYSE_LOGS)} logs of the last 24 hours into a new project`);
  const loadStart = performance.now();
  const tasks = generatedSlices(ANALYSE_LOGS, 1, LOAD_CHUNK);
  await Promise.all(
    Array.from({ length: LOAD_WORKERS }, async () => {
      for (let task = tasks.shift(); task; task = tasks.shift()) {
        await sql.unsafe(INSERT_GENERATED_SQL, insertGeneratedParams([project], task[0], task[1], ANALYSE_LOGS, 1));
      }
    }),
  );
  // Logs that arrived over a day have been vacuumed and analysed by autovacuum as they came; loaded
  // in a minute, they could be vacuumed during the analysis instead (the trigram index's pending
  // list flushed, a core taken for seconds), which the timing would then measure.
  await sql`vacuum (analyze) logs`;
  log(`analyse: loaded in ${seconds(loadStart)} s (with VACUUM ANALYZE); POST /analyze over 24 h`);
  const start = performance.now();
  const response = await call(base, 'POST', `/api/projects/${project}/analyze`, { body: { time_range: '24h' }, token });
  const elapsed = (performance.now() - start) / 1000;
  const [{ unassigned, total }] = await sql`
    select count(*) filter (where lp.log_id is null)::int as unassigned, count(*)::int as total
      from logs l
      left join log_patterns lp on lp.project_id = l.project_id and lp.log_id = l.id
     where l.project_id = ${project}`;
  const { mined } = response.data.result;
  const complete = unassigned === 0 && total === ANALYSE_LOGS;
  rows.push([
    `POST /analyze over ${fmt(ANALYSE_LOGS)} logs of the last 24 h (mining + the pattern of every log)`,
    `${elapsed.toFixed(1)} s: ${fmt(mined.logs)} logs mined into ${fmt(mined.patterns)} patterns, ${fmt(unassigned)} of ${fmt(total)} left without one`,
    `≤ ${TARGETS.analyseSeconds} s, every log tagged`,
    pass(elapsed <= TARGETS.analyseSeconds && complete),
  ]);
}

/**
 * Batch ingest, the bare endpoint and the app in alternated rounds (INGEST_ROUNDS pairs sharing
 * BENCH_SECONDS each side): the database's state moves under a long load (its indexes grow,
 * checkpoints and autovacuum come and go), and a single run of each, one after the other, gave
 * ratios from 0.65 to 1.08 for the same code. Each side's figure is its logs over its time in all
 * rounds; the ratio is theirs, beside each pair's.
 */
/** Single logs posted by SINGLE_CONNECTIONS clients as fast as they are answered, for `seconds`: logs/s. */
async function ingestSingles(name, url, headers, pid, seconds) {
  const bodies = makeEntries(5000, { random: seededRandom(11), spreadMs: 1000 }).map((entry) => JSON.stringify(entry));
  let next = 0;
  const options = {
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    connections: SINGLE_CONNECTIONS,
    requests: [{ setupRequest: (request) => ({ ...request, body: bodies[next++ % bodies.length] }) }],
  };
  await load({ ...options, duration: WARMUP_SECONDS });
  const [serviceBefore, databaseBefore] = [processCpuSeconds(pid), postgresCpuSeconds()];
  const r = await load({ ...options, duration: seconds });
  const perLogMs = (cpuSeconds) => ((cpuSeconds * 1000) / Math.max(1, r.requests.total)).toFixed(2);
  const elapsed = r.duration || seconds;
  const logsPerSecond = r['2xx'] / elapsed;
  const failed = r.non2xx + r.errors + r.timeouts;
  log(
    `  ${name}: ${fmt(logsPerSecond)} logs/s, ${failed} failed, latency p50 ${r.latency.p50} / p99 ${r.latency.p99} ms; ` +
      `CPU per log: service ${perLogMs(processCpuSeconds(pid) - serviceBefore)} ms, database ${perLogMs(postgresCpuSeconds() - databaseBefore)} ms`,
  );
  return { logsPerSecond, stored: r['2xx'], elapsed, failed };
}

async function measureIngest(rows, { sql, onPostgres, database, app, bigProject, ingestKey }) {
  const rounds = onPostgres ? INGEST_ROUNDS : 1;
  const seconds = Math.max(1, Math.round(SECONDS / rounds));
  log(`batch ingest: ${BATCH_ENTRIES} entries per request, ${CONNECTIONS} connections, ${rounds} round(s) of ${WARMUP_SECONDS} s warm-up + ${seconds} s each`);
  const body = JSON.stringify({ logs: makeEntries(BATCH_ENTRIES) });
  const appUrl = `${app.base}/api/projects/${bigProject}/logs/batch`;
  const appHeaders = { 'x-ingest-key': ingestKey };
  const appRounds = [];
  const bareRounds = [];
  const appSingles = [];
  const bareSingles = [];
  if (onPostgres) {
    await createBareTable(sql);
    const bareService = await startService(appDir, { DATABASE_URL: database.url, DATABASE_POOL_SIZE: '10' }, '/health', 'bench/bare-server.mjs');
    killOnCleanup('bare', bareService.pid);
    try {
      for (let round = 0; round < rounds; round++) {
        await sql`checkpoint`;
        bareRounds.push(await ingest('bare Fastify + postgres.js', `${bareService.base}/projects/${bigProject}/logs/batch`, {}, body, bareService.pid, { seconds }));
        await sql`checkpoint`;
        appRounds.push(await ingest('log tracker', appUrl, appHeaders, body, app.pid, { seconds }));
      }
      log(`single logs: one entry per request, ${SINGLE_CONNECTIONS} connections, ${rounds} round(s) of ${WARMUP_SECONDS} s warm-up + ${seconds} s each`);
      for (let round = 0; round < rounds; round++) {
        bareSingles.push(await ingestSingles('bare Fastify + postgres.js', `${bareService.base}/projects/${bigProject}/logs`, {}, bareService.pid, seconds));
        appSingles.push(await ingestSingles('log tracker', `${app.base}/api/projects/${bigProject}/logs`, appHeaders, app.pid, seconds));
      }
    } finally {
      await stopService('bare', bareService);
    }
    // The reference must do the same work: contexts stored as jsonb objects, not as JSON strings.
    const [stored] = await sql`
      select count(context)::int as contexts, count(*) filter (where jsonb_typeof(context) = 'object')::int as objects
        from bench_bare_logs`;
    if (stored.contexts === 0 || stored.objects !== stored.contexts) {
      throw new Error(`the bare endpoint stored ${stored.objects} of ${stored.contexts} contexts as jsonb objects`);
    }
  } else {
    appRounds.push(await ingest('log tracker', appUrl, appHeaders, body, app.pid, { seconds }));
  }
  const appIngest = overall(appRounds);

  const ingestLabel = `batch ingest, ${fmt(BATCH_ENTRIES)} entries/request, ${CONNECTIONS} clients`;
  rows.push([
    `${ingestLabel}: log tracker`,
    `${fmt(appIngest.logsPerSecond)} logs/s (${appIngest.failed} non-2xx/errors)`,
    `≥ ${fmt(TARGETS.ingest)} logs/s`,
    pass(appIngest.logsPerSecond >= TARGETS.ingest && appIngest.failed === 0),
  ]);
  if (bareRounds.length > 0) {
    const bare = overall(bareRounds);
    const ratio = appIngest.logsPerSecond / bare.logsPerSecond;
    const pairs = appRounds.map((a, i) => `${((a.logsPerSecond / bareRounds[i].logsPerSecond) * 100).toFixed(0)}`).join(', ');
    rows.push([`${ingestLabel}: bare Fastify + postgres.js`, `${fmt(bare.logsPerSecond)} logs/s (${bare.failed} non-2xx/errors)`, 'reference', '—']);
    rows.push([
      'batch ingest: log tracker / bare endpoint',
      `${(ratio * 100).toFixed(1)} % (rounds: ${pairs} %)`,
      `≥ ${TARGETS.ratio * 100} %`,
      pass(ratio >= TARGETS.ratio && appIngest.failed === 0),
    ]);
  } else {
    rows.push(['batch ingest: log tracker / bare endpoint', 'n/a: the bare endpoint needs PostgreSQL', `≥ ${TARGETS.ratio * 100} %`, '—']);
  }
  if (appSingles.length > 0) {
    const [app, bare] = [overall(appSingles), overall(bareSingles)];
    const ratio = app.logsPerSecond / bare.logsPerSecond;
    const pairs = appSingles.map((a, i) => `${((a.logsPerSecond / bareSingles[i].logsPerSecond) * 100).toFixed(0)}`).join(', ');
    // Informational: the bare endpoint checks no key, no project and no alert, which a log posted
    // alone pays for in full where a batch shares it.
    rows.push([
      `single logs, one per request, ${SINGLE_CONNECTIONS} clients: log tracker / bare endpoint (one INSERT each; informational)`,
      `${fmt(app.logsPerSecond)} / ${fmt(bare.logsPerSecond)} logs/s = ${(ratio * 100).toFixed(1)} % (rounds: ${pairs} %), ` +
        `${app.failed + bare.failed} non-2xx/errors`,
      'the requests queued for a writer stored together',
      'info',
    ]);
  }
}

/** Batch ingest at 1 000 entries with and without an Idempotency-Key (a fresh one per request), side by side. */
async function measureIdempotency(rows, { app, bigProject, ingestKey }) {
  log(`idempotency key: batch ingest, ${BATCH_ENTRIES} entries per request, without and with a fresh key, ${COMMON_ROUNDS} alternated rounds of ${COMMON_SECONDS} s`);
  const body = JSON.stringify({ logs: makeEntries(BATCH_ENTRIES) });
  const r = await measureIdempotencyCost({
    url: `${app.base}/api/projects/${bigProject}/logs/batch`,
    headers: { 'x-ingest-key': ingestKey },
    body,
    seconds: COMMON_SECONDS,
    rounds: COMMON_ROUNDS,
    connections: CONNECTIONS,
    pid: app.pid,
  });
  const label = `batch ingest, ${fmt(BATCH_ENTRIES)} entries/request`;
  rows.push([`${label}: without Idempotency-Key`, `${fmt(r.without * BATCH_ENTRIES)} logs/s`, 'reference', '—']);
  rows.push([`${label}: with a fresh Idempotency-Key each`, `${fmt(r.with * BATCH_ENTRIES)} logs/s (${r.failed} non-2xx/errors)`, 'reference', '—']);
  rows.push([
    'batch ingest: cost of the Idempotency-Key (1 − with/without)',
    `${(r.cost * 100).toFixed(1)} % (median of ${r.costs.length} back-to-back pairs: ${r.costs.map((c) => (c * 100).toFixed(1)).join(', ')})`,
    `< ${TARGETS.idempotencyCost * 100} %`,
    pass(r.cost < TARGETS.idempotencyCost && r.failed === 0),
  ]);
  if (r.cpuUs) {
    rows.push([
      'batch ingest: the app\'s CPU per request, without / with the key (medians of the pairs)',
      `${Math.round(r.cpuUs.without)} / ${Math.round(r.cpuUs.with)} µs = ${((r.cpuUs.ratio - 1) * 100).toFixed(1)} % more`,
      `< ${TARGETS.idempotencyCost * 100} %`,
      pass(r.cpuUs.ratio - 1 < TARGETS.idempotencyCost),
    ]);
  }
}

/**
 * Clients posting small batches at a steady pace until `stop()`, each request's end time and
 * latency kept. The longest time without any batch completing is the stall a lock would cause.
 */
function ingestProbe(base, projectId, ingestKey) {
  let running = true;
  const done = [];
  const body = JSON.stringify({ logs: makeEntries(RETENTION_PROBE_ENTRIES) });
  const client = async () => {
    while (running) {
      const start = performance.now();
      const next = start + RETENTION_PROBE_PERIOD_MS;
      const response = await fetch(`${base}/api/projects/${projectId}/logs/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-ingest-key': ingestKey },
        body,
      });
      await response.arrayBuffer();
      if (!response.ok) throw new Error(`ingest probe: ${response.status}`);
      const end = performance.now();
      done.push({ end, latency: end - start });
      if (next > end) await new Promise((r) => setTimeout(r, next - end));
    }
  };
  const clients = Promise.all(Array.from({ length: RETENTION_PROBE_CLIENTS }, client));
  return {
    /** The completions within [from, to): count, latency percentiles and the longest gap. */
    window(from, to) {
      const within = done.filter((d) => d.end >= from && d.end < to);
      const ends = [from, ...within.map((d) => d.end).sort((a, b) => a - b), to];
      let gap = 0;
      for (let i = 1; i < ends.length; i++) gap = Math.max(gap, ends[i] - ends[i - 1]);
      return { batches: within.length, ...percentiles(within.map((d) => d.latency)), max: Math.max(...within.map((d) => d.latency)), gap };
    },
    async stop() {
      running = false;
      await clients;
    },
  };
}

/**
 * Watches the database for inserts into logs waiting on a lock, every LOCK_POLL_MS, until
 * `stop()`: the longest wait seen (pg_locks.waitstart to the sample; a wait is seen at most
 * LOCK_POLL_MS short of its length) and how many waits there were.
 */
function lockWaitMonitor(url) {
  const monitor = postgres(url, { max: 1, onnotice: () => {}, connection: { search_path: LOGTRACKER_SEARCH_PATH } });
  let running = true;
  let longest = 0;
  let what = '';
  const waits = new Set();
  const polling = (async () => {
    while (running) {
      const waiting = await monitor`
        select l.pid, l.waitstart::text as since, extract(epoch from clock_timestamp() - l.waitstart) * 1000 as ms,
               l.locktype || ' ' || l.mode || coalesce(' on ' || l.relation::regclass::text, '') as lock,
               (select string_agg(left(b.query, 60), ' | ') from pg_stat_activity b where b.pid = any(pg_blocking_pids(l.pid))) as behind
          from pg_locks l join pg_stat_activity a on a.pid = l.pid
         where not l.granted and l.waitstart is not null and a.query like 'insert into logs%'`;
      for (const w of waiting) {
        waits.add(`${w.pid} ${w.since}`);
        if (Number(w.ms) > longest) [longest, what] = [Number(w.ms), `${w.lock}, behind ${w.behind ?? 'nothing any more'}`];
      }
      await new Promise((r) => setTimeout(r, LOCK_POLL_MS));
    }
  })();
  return {
    async stop() {
      running = false;
      await polling;
      await monitor.end({ timeout: 1 });
      return { longest, waits: waits.size, what };
    },
  };
}

/** Batches a second over a window of `ms`, to a whole number. */
const perSecond = (count, ms) => fmt(Math.round((count * 1000) / ms));

async function measureRetention(rows, { sql, database, app, appEnv, projectIds, ingestKey }) {
  const [bigProject, ...others] = projectIds;
  await sql`update projects set retention_days = ${RETENTION_DAYS.big} where id = ${bigProject}`;
  await sql`update projects set retention_days = ${RETENTION_DAYS.others} where id = any(${others})`;
  const cutoff = (days) => {
    const now = new Date();
    return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - days * 86_400_000);
  };
  const [{ expired }] = await sql`
    select count(*)::int as expired from logs
     where (project_id = ${bigProject} and "timestamp" < ${cutoff(RETENTION_DAYS.big)})
        or (project_id = any(${others}) and "timestamp" < ${cutoff(RETENTION_DAYS.others)})`;
  log(`retention: ${fmt(expired)} expired logs (the big project keeps ${RETENTION_DAYS.big} days, the others ${RETENTION_DAYS.others})`);

  // Ingestion without retention is timed just after it, for as long as it ran (at most a minute):
  // the same traffic on the same data, and as many chances for a slow batch.
  const probe = ingestProbe(app.base, bigProject, ingestKey);
  await new Promise((r) => setTimeout(r, 2000));
  const locks = lockWaitMonitor(database.url);
  const retentionFrom = performance.now();
  const cli = await runNode(appDir, 'dist/cli/retention.js', { ...appEnv, DATABASE_URL: database.url });
  const retentionTo = performance.now();
  const lockWaits = await locks.stop();
  const quietLocks = lockWaitMonitor(database.url);
  const quietTo = retentionTo + Math.min(RETENTION_QUIET_MAX_MS, retentionTo - retentionFrom);
  await new Promise((r) => setTimeout(r, quietTo - retentionTo));
  const quietLockWaits = await quietLocks.stop();
  await probe.stop();
  if (cli.code !== 0) throw new Error(`retention CLI failed (${cli.code}): ${cli.stderr.slice(-500)}`);
  const summary = JSON.parse(cli.stdout.trim().split('\n').at(-1));
  const during = probe.window(retentionFrom, retentionTo);
  const without = probe.window(retentionTo, quietTo);
  const [{ left }] = await sql`
    select count(*)::int as left from logs
     where (project_id = ${bigProject} and "timestamp" < ${cutoff(RETENTION_DAYS.big)})
        or (project_id = any(${others}) and "timestamp" < ${cutoff(RETENTION_DAYS.others)})`;
  const stall = during.gap - without.gap;
  rows.push([
    'retention over expired logs (informational)',
    `${fmt(summary.deleted)} of ${fmt(expired)} logs in ${(summary.duration_ms / 1000).toFixed(1)} s: ${summary.partitions_emptied} days emptied, ` +
      `${summary.partitions_dropped} dropped, the rest in ${fmt(summary.batches)} delete batches; ${fmt(left)} expired left`,
    'every expired log deleted',
    pass(left === 0),
  ]);
  rows.push([
    `ingest during retention: the longest wait of an insert on a lock (pg_locks, sampled every ${LOCK_POLL_MS} ms)`,
    `${ms(lockWaits.longest)} ms during (${fmt(lockWaits.waits)} waits seen), ${ms(quietLockWaits.longest)} ms without (${fmt(quietLockWaits.waits)} waits)`,
    `≤ ${TARGETS.retentionLockWaitMs} ms`,
    pass(lockWaits.longest <= TARGETS.retentionLockWaitMs && left === 0),
  ]);
  rows.push([
    `ingest during retention, ${RETENTION_PROBE_CLIENTS} clients each posting ${RETENTION_PROBE_ENTRIES} logs every ${RETENTION_PROBE_PERIOD_MS} ms: longest time without a batch completing (informational)`,
    `${ms(during.gap)} ms during (${fmt(during.batches)} batches, ${perSecond(during.batches, retentionTo - retentionFrom)}/s, p99 ${ms(during.p99)} / max ${ms(during.max)} ms), ` +
      `${ms(without.gap)} ms without (${fmt(without.batches)} batches, ${perSecond(without.batches, quietTo - retentionTo)}/s, p99 ${ms(without.p99)} / max ${ms(without.max)} ms): ` +
      `${stall > 0 ? '+' : ''}${ms(stall)} ms; ${fmt((RETENTION_PROBE_CLIENTS * 1000) / RETENTION_PROBE_PERIOD_MS)} batches/s asked`,
    'the same without retention',
    'info',
  ]);
  for (const row of rows.slice(-3)) log(`  ${row[1]}`);
  log(`  the longest lock wait during retention: ${lockWaits.what || 'none'}; without: ${quietLockWaits.what || 'none'}`);
}

/**
 * The soak: steady traffic of every kind the log tracker serves, on the big project (its data set
 * when the reads ran, empty otherwise), for SOAK.seconds; prints the table per minute.
 */
async function measureSoak(rows, { app, token, projectId, ingestKey }) {
  const ingest = { 'content-type': 'application/json', 'x-ingest-key': ingestKey };
  const bearer = { authorization: `Bearer ${token}` };
  const random = seededRandom(7);
  // Entries made as each request goes out, timestamped over the second before it, as a shipper
  // sends them: the same few batches sent again and again stamped each log of a 60 s window
  // thousands of times over, and the newest logs of the project were then copies of the same few.
  const batch = () => JSON.stringify({ logs: makeEntries(SOAK_BATCH_ENTRIES, { random, spreadMs: 1000 }) });
  const single = () => JSON.stringify(makeEntries(1, { random, spreadMs: 1000 })[0]);
  const any = (list) => list[Math.floor(Math.random() * list.length)];
  const hourAgo = () => encodeURIComponent(new Date(Date.now() - 3_600_000).toISOString());
  const logs = `/api/projects/${projectId}/logs`;
  const cases = [
    { label: 'POST logs/batch', weight: 20, method: 'POST', path: () => `${logs}/batch`, headers: ingest, get body() { return batch(); } },
    { label: 'POST logs', weight: 25, method: 'POST', path: () => logs, headers: ingest, get body() { return single(); } },
    { label: 'GET logs', weight: 10, method: 'GET', path: () => logs, headers: bearer },
    { label: 'GET logs?level', weight: 10, method: 'GET', path: () => `${logs}?level=${any(['error', 'warning'])}&from_date=${hourAgo()}`, headers: bearer },
    // One case per text, so that the table by request shows which one a tail belongs to.
    ...[COMMON_TERM, RARE_TERM, 'gateway'].map((term) => ({ label: `GET logs?search=${term}`, weight: 5, method: 'GET', path: () => `${logs}?search=${term}`, headers: bearer })),
    { label: 'GET logs?level&search', weight: 5, method: 'GET', path: () => `${logs}?level=error&search=${COMMON_TERM}`, headers: bearer },
    { label: 'GET stats', weight: 6, method: 'GET', path: () => `/api/projects/${projectId}/stats?time_range=${any(['1h', '24h', '7d'])}`, headers: bearer },
    { label: 'GET insights', weight: 4, method: 'GET', path: () => `/api/projects/${projectId}/insights?limit=20`, headers: bearer },
    { label: 'GET health', weight: 5, method: 'GET', path: () => '/api/health' },
  ];
  log(`soak: ${SOAK.seconds} s at ${SOAK.rate} requests/s over ${SOAK.connections} connections: ${cases.map((c) => `${c.label} ${c.weight} %`).join(', ')}`);
  const title = `Log tracker soak — per minute (${SOAK.seconds} s, ${SOAK.rate} requests/s asked; memory: the minute's samples)`;
  // The log tracker's soak must also hold steady as its own ingest grows the project: its last
  // whole minute's throughput and p99 within a fifth of its first's.
  const soak = await soakApp({ app, metricsToken: METRICS_TOKEN, title, cases, log, printTable, requireSteady: true });
  rows.push(...soak.rows);
  return soak.ok;
}

// --- the run -------------------------------------------------------------------------------------
async function main() {
  const started = performance.now();
  const database = await openDatabase();
  const onPostgres = database.kind === 'postgres';
  const appEnv = {
    ...benchAppEnv(onPostgres ? database.url : undefined),
    RATE_LIMIT_INGEST: '100000000',
    RETENTION_INTERVAL_MINUTES: '0',
    ALERT_WORKER_ENABLED: 'false',
    // Maintenance runs when the app starts (it is restarted after the load), not amid the measurements.
    MAINTENANCE_INTERVAL_SECONDS: '86400',
    // /metrics behind a token, as in production: the soak reads the app's memory there.
    METRICS_TOKEN,
  };
  const startApp = async () => {
    const service = await startService(appDir, appEnv, '/api/health');
    killOnCleanup('app', service.pid);
    return service;
  };

  log('starting the log tracker (migrations run at start-up)');
  let app = await startApp();
  const password = 'bench-password-1234';
  const registered = await call(app.base, 'POST', '/api/auth/register', {
    body: { name: 'Bench', email: `bench-${Date.now()}@example.test`, password, password_confirmation: password },
  });
  const token = registered.data.token;
  const projectIds = [];
  for (const name of ['bench-big', ...Array.from({ length: OTHER_PROJECTS }, (_, i) => `bench-other-${i + 1}`)]) {
    projectIds.push((await call(app.base, 'POST', '/api/projects', { body: { name }, token })).data.id);
  }
  const bigProject = projectIds[0];
  const ingestKey = (await call(app.base, 'POST', `/api/projects/${bigProject}/ingest-keys`, { body: { name: 'bench' }, token })).data.key;

  // The data set.
  let loaded;
  const sql = onPostgres ? postgres(database.url, { max: LOAD_WORKERS, onnotice: () => {}, connection: { search_path: LOGTRACKER_SEARCH_PATH } }) : undefined;
  if (sql) cleanups.set('sql', () => void sql.end({ timeout: 1 }));
  const needsData = ONLY.has('reads') || ONLY.has('explorer') || (ONLY.has('retention') && onPostgres);
  if (!needsData) {
    loaded = { total: 0, insertSeconds: 0 };
  } else if (onPostgres) {
    // The daily partitions a deployment that kept its 30 days has, so that the data set's days
    // sit in their own partitions (not in logs_default) and every query plans over all of them.
    const [{ created }] = await sql`
      select logs_ensure_partitions((now() at time zone 'UTC')::date - 31, (now() at time zone 'UTC')::date + 7) as created`;
    const [{ partitions }] = await sql`select count(*)::int as partitions from pg_inherits where inhparent = 'logs'::regclass`;
    log(`${created} daily partitions created for the data set's days: ${partitions} partitions in all`);
    log(`loading ${fmt(LOGS_PER_PROJECT)} logs into each of ${projectIds.length} projects with INSERT … SELECT`);
    loaded = await loadWithSql(sql, projectIds);
    log('restarting the app (its start-up maintenance compacts the rollups)');
    await stopService('app', app);
    app = await startApp();
    await waitForQuiet(sql);
    log('VACUUM ANALYZE');
    const vacuumStart = performance.now();
    await sql`vacuum analyze`;
    await sql`checkpoint`;
    loaded.vacuumSeconds = (performance.now() - vacuumStart) / 1000;
    // Reads on a database at rest: no autovacuum of the load, and the checkpoint's pages written
    // out by the kernel (on loopback PostgreSQL runs without fsync: they are written behind).
    const settleStart = performance.now();
    await waitForQuiet(sql, 120_000, { autovacuum: true });
    const dirty = await waitForWrittenOut(60_000);
    log(`at rest after ${seconds(settleStart)} s (${dirty === undefined ? 'dirty pages not known' : `${fmt(Math.round(dirty / 1024))} MiB of dirty pages left`})`);
  } else {
    const count = Math.min(LOGS_PER_PROJECT, PGLITE_MAX_LOGS);
    log(`loading ${fmt(count)} logs into the big project through the batch endpoint (PGlite)`);
    loaded = await loadWithApi(app.base, bigProject, ingestKey, count);
  }
  const bigTotal = onPostgres ? LOGS_PER_PROJECT : loaded.total;
  log(`loaded ${fmt(loaded.total)} logs in ${loaded.insertSeconds.toFixed(1)} s (${fmt(loaded.total / loaded.insertSeconds)} logs/s)` +
    (loaded.vacuumSeconds ? `, VACUUM ANALYZE ${loaded.vacuumSeconds.toFixed(1)} s` : ''));

  const rows = [];
  if (needsData) rows.push([
    'data set load (informational)',
    `${fmt(loaded.total)} logs in ${loaded.insertSeconds.toFixed(0)} s (${fmt(loaded.total / loaded.insertSeconds)} logs/s)${loaded.vacuumSeconds ? ` + VACUUM ANALYZE ${loaded.vacuumSeconds.toFixed(0)} s` : ''}`,
    onPostgres ? 'INSERT … SELECT, server-side' : 'through the API',
    'info',
  ]);

  log(`reads on the big project (${fmt(bigTotal)} logs), ${READ_SAMPLES} requests per case after ${READ_WARMUP} warm-ups`);
  const readsStart = performance.now();
  const readRows = ONLY.has('reads') ? await measureReads(app.base, token, bigProject, bigTotal, { bareEnv: onPostgres ? appEnv : undefined }) : [];
  log(`reads took ${seconds(readsStart)} s`);

  // The log explorer page in Chromium over the big project, before any ingest adds to it (bench/explorer.mjs).
  if (ONLY.has('explorer')) rows.push(...(await measureExplorer({ base: app.base, token, projectId: bigProject, total: bigTotal, log, fmt })));

  if (ONLY.has('common')) {
    if (onPostgres) {
      // Before the phases that write: on a database at rest (autovacuum included), both sides alike.
      await waitForQuiet(sql, 120_000, { autovacuum: true });
      log('common path: GET /api/projects and GET /api/user against the bare endpoint, alternating');
      const bare = await startBareReads('logtracker', appEnv);
      killOnCleanup('bare reads', bare.pid);
      try {
        rows.push(
          ...(await measureCommonPath({
            app: app.base,
            bare: bare.base,
            pids: { app: app.pid, bare: bare.pid },
            token,
            seconds: COMMON_SECONDS,
            rounds: COMMON_ROUNDS,
            cases: [
              { label: `GET /api/projects (${projectIds.length} projects)`, appPath: '/api/projects', barePath: '/api/projects' },
              { label: 'GET /api/user', appPath: '/api/user', barePath: '/api/user' },
            ],
          })),
        );
      } finally {
        await stopService('bare reads', bare);
      }
    } else {
      rows.push(['common path against the bare endpoint', 'n/a: the bare endpoint needs PostgreSQL', '≥ 0.7×', '—']);
    }
  }
  if (ONLY.has('ingest')) await measureIngest(rows, { sql, onPostgres, database, app, bigProject, ingestKey });
  if (ONLY.has('idempotency')) await measureIdempotency(rows, { app, bigProject, ingestKey });
  // The logtracker CLI against this server (bench/ship.mjs).
  if (ONLY.has('ship')) rows.push(...(await measureShip({ base: app.base, projectId: bigProject, ingestKey, log })));

  if (ONLY.has('memory')) {
    log('memory: three 5 MiB batches');
    const memory = await measureMemory(app, bigProject, ingestKey);
    rows.push(memory.row);
  }

  if (ONLY.has('retention')) {
    if (onPostgres) {
      log('retention: the CLI while clients post batches');
      await measureRetention(rows, { sql, database, app, appEnv, projectIds, ingestKey });
    } else {
      rows.push(['retention over expired logs', 'n/a: the data set of expired logs needs PostgreSQL', 'every expired log deleted', '—']);
    }
  }
  if (ONLY.has('burst')) await measureBurst(rows, { base: app.base, token });
  if (ONLY.has('analyse')) {
    if (onPostgres) {
      // After retention's millions of deletes autovacuum works for minutes: the analysis is timed
      // on a database at rest, as the common path is.
      await waitForQuiet(sql, 300_000, { autovacuum: true });
      await measureAnalyse(rows, { sql, base: app.base, token });
    }
    else rows.push(['POST /analyze over 1 000 000 logs of the last 24 h', 'n/a: the data set needs PostgreSQL', `≤ ${TARGETS.analyseSeconds} s`, '—']);
  }
  if (ONLY.has('growth')) {
    if (onPostgres) await waitForQuiet(sql, 300_000, { autovacuum: true });
    // An instance of its own with maintenance every minute, as in production: the phase ingests for
    // minutes, and the rollups it appends are compacted as they would be (the others run without).
    const grower = await startService(appDir, { ...appEnv, MAINTENANCE_INTERVAL_SECONDS: '60' }, '/api/health');
    killOnCleanup('growth app', grower.pid);
    // The bare endpoint's read of a log by its id in the same turns as the app's reads (growth.mjs).
    const bare = onPostgres ? await startBareReads('logtracker', appEnv) : undefined;
    if (bare) killOnCleanup('bare reads', bare.pid);
    const reference = onPostgres && GROWTH_SIZES.length > 1 ? await growthReference(sql, database.url, appEnv) : undefined;
    try {
      // Each size read on a database at rest, as the main reads and the soak: its clients and
      // autovacuum idle, a CHECKPOINT, the kernel's pages written out (30–50 s a size). It did not
      // explain the app's higher p95s at 4 000 000 (p50 flat, the bare endpoint's p95 flat too in
      // the same run): docs/performance.md, seventeenth session.
      const settle = async () => {
        if (!sql) return;
        const start = performance.now();
        await new Promise((r) => setTimeout(r, 12_000));
        await waitForQuiet(sql, 180_000, { autovacuum: true, also: reference ? [reference.name] : [] });
        await sql`checkpoint`;
        const dirty = await waitForWrittenOut(60_000);
        log(`growth: at rest after ${seconds(start)} s (${dirty === undefined ? 'dirty pages not known' : `${fmt(Math.round(dirty / 1024))} MiB of dirty pages left`})`);
      };
      await measureGrowth(rows, { base: grower.base, bare: bare?.base, token, sql, log, fmt, metricsToken: METRICS_TOKEN, settle, reference });
    } finally {
      if (reference) await reference.stop();
      if (bare) await stopService('bare reads', bare);
      await stopService('growth app', grower);
    }
  }
  let soakOk = true;
  if (ONLY.has('soak')) {
    // Also an instance with maintenance every minute, as in production: ten minutes of single logs
    // append a rollup row each, and without their compaction every statistics read and search
    // summed more of them each minute (the soak's throughput fell from 199 to 88 requests/s).
    if (onPostgres) {
      await waitForQuiet(sql, 300_000, { autovacuum: true });
      // From a database at rest, as the reads: the phases before (the growth's millions of logs)
      // leave gigabytes of pages to write. (The soak's first seconds still stalled in a full run
      // after this: docs/performance.md, "A word's keys computed once a search".)
      await sql`checkpoint`;
      await waitForWrittenOut(60_000);
    }
    const soaker = await startService(appDir, { ...appEnv, MAINTENANCE_INTERVAL_SECONDS: '60' }, '/api/health');
    killOnCleanup('soak app', soaker.pid);
    try {
      soakOk = await measureSoak(rows, { app: soaker, token, projectId: bigProject, ingestKey });
    } finally {
      await stopService('soak app', soaker);
    }
  }
  rows.push(...readRows);

  if (sql && process.env.BENCH_DATABASE_URL) await sql`drop table if exists bench_bare_logs`;

  const dataSet = onPostgres
    ? `${fmt(LOGS_PER_PROJECT)} logs in the measured project, ${fmt(loaded.total)} across ${projectIds.length} projects`
    : `${fmt(loaded.total)} logs in the measured project only`;
  const title = `Log tracker bench — ${database.label}; ${dataSet}; node ${process.version}, ${availableParallelism()} CPUs; ${new Date().toISOString().slice(0, 16)}Z`;
  const table = printTable(title, rows, ['figure', 'measured', 'target', 'result']);
  const misses = rows.filter((r) => r[3] === 'FAIL').length;
  console.log(`\n${misses === 0 ? 'every target met' : `${misses} figure(s) miss their target`}; ${seconds(started)} s in all`);
  if (PARTIAL) log(`BENCH_ONLY=${[...ONLY].join(',')}: results.md left as it was`);
  else {
    writeFileSync(
      resultsFile,
      `# Log tracker bench\n\n${title}\n\n${table}\n\n` +
        `Written by \`pnpm bench\` (apps/logtracker-api/bench/run.mjs) with BENCH_LOGS=${LOGS_PER_PROJECT}, BENCH_SECONDS=${SECONDS}. ` +
        `Reads: ${READ_SAMPLES} sequential requests per case after ${READ_WARMUP} warm-ups, on the data set before ingest. ` +
        `Ingest: autocannon, ${CONNECTIONS} connections, the same ${fmt(BATCH_ENTRIES)}-entry batch, ${WARMUP_SECONDS} s warm-up then ${SECONDS} s.\n`,
    );
    log(`table written to ${resultsFile}`);
  }

  await stopService('app', app);
  if (sql) {
    cleanups.delete('sql');
    await sql.end({ timeout: 5 });
  }
  if (!soakOk) log('soak: memory unstable, failed requests, or a last minute off its first by more than a fifth (see above): exit 1');
  return soakOk ? 0 : 1;
}

try {
  const code = await main();
  cleanupAll();
  process.exit(code);
} catch (error) {
  console.error(`[bench] failed: ${error.stack ?? error}`);
  cleanupAll();
  process.exit(1);
}
