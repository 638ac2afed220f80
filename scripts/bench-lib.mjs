// Shared by the apps' benches: start a built service on a free loopback port, run autocannon
// against it, and print a table of figures with their targets.
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts `node dist/server.js` (or another script) of an app with the given environment; resolves
 * once health answers, with the child's `pid` (to read its memory) and `stop`.
 */
export async function startService(appDir, env, healthPath, script = 'dist/server.js') {
  const port = await freePort();
  const child = spawn(process.execPath, [script], {
    cwd: appDir,
    env: { ...process.env, LOG_LEVEL: 'warn', HOST: '127.0.0.1', PORT: String(port), ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}`);
    try {
      const response = await fetch(base + healthPath);
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGTERM');
      throw new Error('service did not become healthy within 60 s');
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    base,
    pid: child.pid,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', resolve);
        child.kill('SIGTERM');
      }),
  };
}

/** Runs a script of an app with node to its end: answers its exit code, stdout and stderr. */
export function runNode(appDir, script, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script], { cwd: appDir, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export function load(options) {
  return new Promise((resolve, reject) => {
    autocannon({ connections: 10, duration: 10, ...options }, (error, result) => (error ? reject(error) : resolve(result)));
  });
}

/**
 * GET `url` at a steady `rate` a second over `connections` kept-alive connections for `seconds`: each
 * connection sends its next request at its own even pace (or as soon as its previous answer arrives,
 * when that is later). autocannon's rate limit sends each second's requests back to back and then
 * waits, so its latencies at a given rate are those of a saturated server; these are a request's.
 * Answers the latencies' p50 and p99 in ms, the number of requests, and how many were not 2xx.
 */
export async function pacedLoad({ url, headers = {}, connections = 20, rate, seconds }) {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const interval = (connections * 1000) / rate;
  const latencies = [];
  let non2xx = 0;
  const get = () =>
    new Promise((resolve, reject) => {
      const started = performance.now();
      const req = httpRequest(url, { agent, headers }, (res) => {
        res.resume();
        res.once('end', () => {
          if (res.statusCode < 200 || res.statusCode >= 300) non2xx += 1;
          latencies.push(performance.now() - started);
          resolve();
        });
      });
      req.once('error', reject);
      req.end();
    });
  const start = performance.now();
  const end = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async (_, i) => {
      for (let next = start + (i * interval) / connections; next < end; next += interval) {
        const wait = next - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        await get();
      }
    }),
  );
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] * 10) / 10;
  return { p50: at(0.5), p99: at(0.99), requests: latencies.length, non2xx };
}

/** Prints a Markdown-style table under its title; answers the table's text (valid Markdown). */
/**
 * What an `Idempotency-Key` costs a write: `rounds` alternated runs of `seconds` each, without the
 * header and with a fresh key on every request (so each one claims and records a key), on the same
 * URL and body. Answers each side's best round in requests a second and the cost (1 − with/without).
 */
export async function measureIdempotencyCost({ url, method = 'POST', headers, body, seconds = 3, rounds = 4, connections = 10, pid }) {
  const base = { url, method, headers: { 'content-type': 'application/json', ...headers }, body, connections };
  const keyed = {
    ...base,
    requests: [{ setupRequest: (request) => ({ ...request, headers: { ...request.headers, 'idempotency-key': randomUUID() } }) }],
  };
  await load({ ...base, duration: 1 });
  await load({ ...keyed, duration: 1 });
  const best = { without: 0, with: 0 };
  const costs = [];
  const cpuPairs = [];
  let failed = 0;
  for (let round = 0; round < rounds; round++) {
    // Alternated, the order swapped each round: drift in the machine's load falls on both sides.
    const order = round % 2 === 0 ? ['without', 'with'] : ['with', 'without'];
    const rate = {};
    const cpu = {};
    for (const side of order) {
      const cpuBefore = pid ? processCpuSeconds(pid) : NaN;
      const r = await load({ ...(side === 'with' ? keyed : base), duration: seconds });
      failed += r.non2xx + r.errors + r.timeouts;
      rate[side] = r['2xx'] / (r.duration || seconds);
      best[side] = Math.max(best[side], rate[side]);
      cpu[side] = ((processCpuSeconds(pid) - cpuBefore) / r.requests.total) * 1e6;
    }
    if (rate.without > 0) costs.push(1 - rate.with / rate.without);
    if (pid) cpuPairs.push(cpu);
  }
  // The cost is the median over the rounds of each round's pair (measured back to back), so a
  // burst of load on the machine during one round moves one pair, not the verdict. The server's CPU
  // time per request (when `pid` is given) moves far less with the machine than its throughput.
  const cpuUs = cpuPairs.length
    ? { without: median(cpuPairs.map((c) => c.without)), with: median(cpuPairs.map((c) => c.with)), ratio: median(cpuPairs.map((c) => c.with / c.without)) }
    : null;
  return { without: best.without, with: best.with, cost: costs.length ? median(costs) : NaN, costs, cpuUs, failed };
}

export function printTable(title, rows, header = ['figure', 'measured', 'target']) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i] ?? '').length)));
  const line = (cells) => `| ${header.map((_, i) => String(cells[i] ?? '').padEnd(widths[i])).join(' | ')} |`;
  const text = [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
  console.log(`\n${title}\n`);
  console.log(text);
  return text;
}

/** The median of some numbers (the mean of the middle two for an even count). */
function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** `median (min–max)` of some figures, each rounded to `digits`. */
function spread(values, digits = 0) {
  const f = (v) => v.toFixed(digits);
  return `${f(median(values))} (${f(Math.min(...values))}–${f(Math.max(...values))})`;
}

/**
 * The common read path against the bare reference (scripts/bare-reads.mjs), in pairs: for each case,
 * `rounds` times the app then the bare endpoint, each `seconds` long at `connections` connections
 * (after a short warm-up). The machine's speed drifts from one few-second slice to the next (the
 * same build answered 345 and 568 µs of CPU per request in two runs a minute apart), so each pair
 * gives a ratio of its own, and the figures are the medians over the pairs, with their range: one
 * slowed slice moves the range, not the verdict. Answers table rows: requests per second and
 * saturated p99 of both sides, the ratio, and each server's CPU time per request when `pids`
 * names their processes, against the targets (≥ `ratio`× and p99 ≤ `p99Ms`). Then both sides
 * `pacedRounds` more times, alternating, at the same fixed rate, half what the app answered at
 * saturation: there the p99 is the time a request takes, where at saturation it is mostly the length
 * of the queue the 20 connections keep full.
 */
export async function measureCommonPath({ app, bare, token, cases, seconds = 3, rounds = 6, pacedRounds = 3, connections = 20, ratio = 0.7, p99Ms = 15, pids = {} }) {
  const headers = { authorization: `Bearer ${token}` };
  const rows = [];
  const sides = (appPath, barePath) => [['app', app + appPath], ['bare', bare + barePath]];
  for (const { label, appPath, barePath } of cases) {
    for (const [, url] of sides(appPath, barePath)) await load({ url, headers, connections, duration: 1 });
    const pairs = [];
    for (let round = 0; round < rounds; round++) {
      const pair = {};
      for (const [side, url] of sides(appPath, barePath)) {
        const cpuBefore = processCpuSeconds(pids[side]);
        const result = await load({ url, headers, connections, duration: seconds });
        if (result.non2xx > 0 || result.errors > 0) throw new Error(`${label} (${side}): ${result.non2xx} non-2xx, ${result.errors} errors`);
        // The CPU time the server process spent per request: what the common path costs, apart
        // from how the machine's two cores were shared with the load generator and PostgreSQL.
        const cpu = (processCpuSeconds(pids[side]) - cpuBefore) / result.requests.total;
        pair[side] = { rate: result.requests.total / result.duration, p99: result.latency.p99, cpuUs: cpu * 1e6 };
      }
      pairs.push(pair);
    }
    const of = (side, key) => pairs.map((pair) => pair[side][key]);
    const ratios = pairs.map((pair) => pair.app.rate / pair.bare.rate);
    const measured = median(ratios);
    const appP99 = median(of('app', 'p99'));
    const cpuRatios = pairs.map((pair) => pair.app.cpuUs / pair.bare.cpuUs);
    const cpu = cpuRatios.some(Number.isNaN)
      ? ''
      : `; CPU per request ${Math.round(median(of('app', 'cpuUs')))} / ${Math.round(median(of('bare', 'cpuUs')))} µs, ${spread(cpuRatios, 2)}×`;
    rows.push([
      `${label}: app / bare Fastify + postgres.js, ${connections} connections, median of ${rounds} pairs of ${seconds} s (range)`,
      `${Math.round(median(of('app', 'rate')))} req/s (p99 ${spread(of('app', 'p99'))} ms) / ${Math.round(median(of('bare', 'rate')))} req/s ` +
        `(p99 ${spread(of('bare', 'p99'))} ms) = ${spread(ratios, 2)}×${cpu}`,
      `≥ ${ratio}×, p99 ≤ ${p99Ms} ms`,
      measured >= ratio && appP99 <= p99Ms ? 'pass' : 'FAIL',
    ]);
    const fixedRate = Math.max(10, Math.round(median(of('app', 'rate')) / 2 / 10) * 10);
    const paced = { app: [], bare: [] };
    for (let round = 0; round < pacedRounds; round++) {
      for (const [side, url] of sides(appPath, barePath)) {
        const result = await pacedLoad({ url, headers, connections, rate: fixedRate, seconds });
        if (result.non2xx > 0) throw new Error(`${label} (${side}, fixed rate): ${result.non2xx} non-2xx`);
        paced[side].push(result);
      }
    }
    const pacedOf = (side, key) => paced[side].map((result) => result[key]);
    const delivered = (side) => Math.round(median(pacedOf(side, 'requests')) / seconds);
    rows.push([
      `${label}: app / bare at ${fixedRate} req/s (half the app's), ${connections} connections, median of ${pacedRounds} runs of ${seconds} s (range)`,
      `p50 ${spread(pacedOf('app', 'p50'), 1)} / ${spread(pacedOf('bare', 'p50'), 1)} ms, p99 ${spread(pacedOf('app', 'p99'), 1)} / ${spread(pacedOf('bare', 'p99'), 1)} ms ` +
        `(${delivered('app')} / ${delivered('bare')} req/s delivered)`,
      `p99 ≤ ${p99Ms} ms`,
      median(pacedOf('app', 'p99')) <= p99Ms ? 'pass' : 'FAIL',
    ]);
  }
  return rows;
}

/** Linux's USER_HZ, the unit of /proc/<pid>/stat's CPU times (100 on every mainstream architecture). */
const CLOCK_TICKS = 100;

/** The user and system CPU seconds a process has used (Linux /proc), NaN when unknown. */
export function processCpuSeconds(pid) {
  if (!pid) return Number.NaN;
  try {
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').at(-1).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}

/**
 * The CPU seconds every local PostgreSQL process has used (Linux /proc; 0 when the server is
 * elsewhere): the database's share of a measured load on this machine. A backend that has ended
 * counts in its parent's children's times (the postmaster's), so the sum only grows.
 */
export function postgresCpuSeconds() {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (!stat.includes('(postgres)')) continue;
      const fields = stat.split(') ').at(-1).split(' ');
      total += (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / CLOCK_TICKS;
    } catch {
      // The process ended while being read.
    }
  }
  return total;
}

/**
 * The environment both apps run under in a bench: production mode, nothing on disk, a fixed JWT
 * secret (shared with the bare endpoint, and kept across a restart), quiet logs, no rate limits.
 */
export function benchAppEnv(databaseUrl) {
  return {
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    DATA_DIR: 'memory://',
    JWT_SECRET: randomBytes(32).toString('base64url'),
    NODE_ENV: 'production',
    // Production requires a mail transport; nothing a bench does sends mail that must arrive.
    SMTP_URL: 'smtp://127.0.0.1:2525',
    LOG_LEVEL: 'warn',
    DATABASE_POOL_SIZE: '10',
    RATE_LIMIT_AUTHENTICATED: '100000000',
    RATE_LIMIT_PUBLIC: '100000000',
  };
}

/** The bare reference of the common read path (scripts/bare-reads.mjs) for `app` (logtracker | marketplace). */
export function startBareReads(app, env) {
  return startService(fileURLToPath(new URL('.', import.meta.url)), { ...env, BARE_APP: app }, '/health', 'bare-reads.mjs');
}

// Kept-alive connections per origin for the timed GETs below: one for a client in sequence, as
// many as requests run at once.
const timedAgents = new Map();

/**
 * One timed GET over node:http with a kept-alive connection, its JSON body parsed: answers the
 * milliseconds from the request to the body's last byte, and the body; throws on a non-2xx answer.
 * A latency read by the benches is the service's, so the client is the least Node has: `fetch`
 * (undici's WHATWG streams) added 0.3 ms at the median and 0.5–1.0 ms at p95 of its own to the
 * same requests, sent alternately, on this 2-CPU machine.
 */
export function timedGet(url, token) {
  const { origin } = new URL(url);
  let agent = timedAgents.get(origin);
  if (!agent) timedAgents.set(origin, (agent = new Agent({ keepAlive: true })));
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = httpRequest(url, { agent, headers: token ? { authorization: `Bearer ${token}` } : {} }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.once('end', () => {
        const elapsed = performance.now() - started;
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode < 200 || res.statusCode >= 300) return reject(new Error(`GET ${url}: ${res.statusCode} ${text.slice(0, 200)}`));
        // A body that is not JSON rejects the request, rather than throwing out of the listener.
        try {
          resolve({ elapsed, body: JSON.parse(text) });
        } catch (error) {
          reject(new Error(`GET ${url}: ${res.statusCode}, not JSON: ${text.slice(0, 200)}`, { cause: error }));
        }
      });
      res.once('error', reject);
    });
    req.once('error', reject);
    req.end();
  });
}

/**
 * The latency of one client: `warmup` requests, then `samples` timed ones in sequence (each body
 * read). A latency target is the service's time, measured without the queue a saturating load
 * builds; the throughput under load is measured apart. `pathAt(i)` varies the request.
 */
export async function sequentialLatency(base, pathAt, { token, method = 'GET', samples = 200, warmup = 20 } = {}) {
  const once = async (i) => {
    const start = performance.now();
    const response = await fetch(base + pathAt(i), { method, headers: token ? { authorization: `Bearer ${token}` } : {} });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${pathAt(i)}: ${response.status} ${text.slice(0, 200)}`);
    return performance.now() - start;
  };
  for (let i = 0; i < warmup; i++) await once(i);
  const times = [];
  for (let i = 0; i < samples; i++) times.push(await once(warmup + i));
  times.sort((a, b) => a - b);
  const at = (q) => times[Math.min(times.length - 1, Math.max(0, Math.ceil(q * times.length) - 1))];
  return { n: times.length, p50: at(0.5), p95: at(0.95), p99: at(0.99) };
}

/** A size knob read from the environment: a positive integer, or `fallback` when unset. */
export function positiveInt(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, not "${raw}"`);
  return value;
}
