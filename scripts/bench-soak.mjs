// The soak phase of both apps' benches: a steady mixed load on loopback for SOAK_SECONDS, the
// server's memory sampled every 10 s, a table per minute and a verdict on memory and errors.
//
// The load is an autocannon run at a fixed overall rate (SOAK_RATE requests/s over SOAK_CONNECTIONS
// connections), each request drawn from the app's weighted cases, plus the app's write flows (several
// requests that depend on each other's answers) run with fetch at SOAK_FLOW_RATE flows/s. Memory
// comes from the app's /metrics (prom-client's `process_resident_memory_bytes` and
// `nodejs_heap_size_used_bytes`) when the bench enables it, from /proc/<pid>/status (RSS only)
// otherwise. Stable: after a warm-up (the first minute, or sixth of the run when shorter), the lowest
// sample of the last third not above the lowest of the first third by more than the margin, for the
// heap used and for RSS alike; and not one non-2xx answer or request error. The lowest, not the mean:
// heap used swings with the collector's sawtooth (100 MiB between two samples), and what a leak
// raises is the floor the heap comes back to after each collection. Steady (a verdict for every
// app, required by the log tracker's, whose soak grows its project): the last whole minute's
// throughput and p99 within a fifth of the first's. Before all of it, SOAK_WARMUP_SECONDS (30) of
// the same load, reported on its own line (warmupSetting).
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { positiveInt } from './bench-lib.mjs';

export const SAMPLE_SECONDS = 10;
const MINUTE_MS = 60_000;
/** The margin of growth allowed between the first and last thirds: whichever is larger. */
export const MARGIN = { fraction: 0.2, bytes: 30 * 1024 * 1024 };

export function soakSettings() {
  return {
    seconds: positiveInt('SOAK_SECONDS', 600),
    rate: positiveInt('SOAK_RATE', 200),
    connections: positiveInt('SOAK_CONNECTIONS', 10),
    flowRate: positiveInt('SOAK_FLOW_RATE', 2),
    // The same mix at the same rate before the measured run (0: none).
    warmup: warmupSetting(),
  };
}

/**
 * SOAK_WARMUP_SECONDS (default 30, 0 for none): the load before the measured run, reported on its
 * own. A bench's soak follows phases that wrote millions of logs of other projects through the
 * database's cache, and starts an instance with no connection open: its first seconds measured
 * the soak's project read back from the kernel (searches of 5–7 s, 297 answers in the first 10 s
 * at 200 asked per second) rather than how the service holds up over ten minutes.
 */
function warmupSetting() {
  const raw = process.env.SOAK_WARMUP_SECONDS;
  if (raw === undefined || raw === '') return 30;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`SOAK_WARMUP_SECONDS must be a whole number of seconds, 0 or more (got ${raw})`);
  return value;
}

const mib = (bytes) => (Number.isFinite(bytes) ? (bytes / 1024 / 1024).toFixed(1) : 'n/a');
const memoryText = (m) => `RSS ${mib(m.rss)} MiB${Number.isFinite(m.heap) ? `, heap used ${mib(m.heap)} MiB` : ''}`;
const log = (message) => console.log(`[bench] ${message}`);

function percentile(sorted, q) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** Prometheus text → the value of an unlabelled sample. */
export function metricValue(text, name) {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)`, 'm').exec(text);
  return match ? Number(match[1]) : NaN;
}

/** Prometheus text → the seconds each background job has run so far (job_duration_seconds_sum), by job. */
export function jobSeconds(text) {
  const jobs = {};
  for (const [, job, value] of text.matchAll(/^job_duration_seconds_sum\{[^}]*job_name="([^"]+)"[^}]*\} ([0-9.e+-]+)/gm)) jobs[job] = Number(value);
  return jobs;
}

/**
 * RSS and heap used of the server: from /metrics when it answers, from /proc (RSS only)
 * otherwise; with /metrics, the seconds its background jobs have run so far (`jobs`).
 */
async function memoryOf({ pid, metrics }) {
  if (metrics) {
    try {
      const response = await fetch(metrics.url, { headers: metrics.token ? { authorization: `Bearer ${metrics.token}` } : {} });
      const text = await response.text();
      if (response.ok) {
        const rss = metricValue(text, 'process_resident_memory_bytes');
        const heap = metricValue(text, 'nodejs_heap_size_used_bytes');
        if (Number.isFinite(rss) && Number.isFinite(heap)) return { rss, heap, jobs: jobSeconds(text), source: '/metrics' };
      }
    } catch {
      // fall back to /proc below
    }
  }
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rss = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN) * 1024;
  return { rss, heap: NaN, source: `/proc/${pid}/status` };
}

/** The warm-up left out of the verdict: the first minute, or the first sixth of a shorter run. */
export const warmupSeconds = (seconds) => Math.min(60, seconds / 6);

/**
 * The lowest sample of the last third (after the warm-up) against the first third's, the means
 * beside them; stable when the growth of the lowest is within the margin.
 */
function thirds(samples, seconds, field) {
  const warmup = warmupSeconds(seconds);
  const third = (seconds - warmup) / 3;
  const values = (from, to) => samples.filter((s) => s.t > from && s.t <= to && Number.isFinite(s[field])).map((s) => s[field]);
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const first = values(warmup, warmup + third);
  const last = values(warmup + 2 * third, Infinity);
  if (first.length === 0 || last.length === 0) return undefined;
  const [a, b] = [Math.min(...first), Math.min(...last)];
  const allowed = Math.max(a * MARGIN.fraction, MARGIN.bytes);
  return { first: a, last: b, growth: b - a, allowed, stable: b - a <= allowed, means: [mean(first), mean(last)], n: [first.length, last.length] };
}

/**
 * Runs the soak. `cases`: weighted requests for autocannon ({ label, weight, method, path, headers?,
 * body? }); `flows`: async functions, each one write flow through `request(label, method, path,
 * options)` (timed and counted like autocannon's requests; it throws on a non-2xx answer, which ends
 * that flow). Answers the table rows (per minute, then the verdicts) and `ok`.
 */
/**
 * The soak of one app started by a bench (`{ base, pid }`), its /metrics read with `metricsToken`:
 * runs it, prints the table per minute under `title` and logs each figure; answers runSoak's result.
 */
export async function soakApp({ app, metricsToken, title, cases, flows, log, printTable, requireSteady = false }) {
  const soak = await runSoak({ base: app.base, pid: app.pid, metrics: { url: `${app.base}/metrics`, token: metricsToken }, settings: soakSettings(), cases, flows, requireSteady });
  printSoakMinutes(printTable, title, soak);
  for (const row of soak.rows) log(`  ${row[0]}: ${row[1]} [${row[3]}]`);
  return soak;
}

/**
 * autocannon at `rate` requests/s overall over `connections` for `seconds`, each request drawn from
 * `cases` by weight; `onAnswer(label, ms, ok, status)` for every answer, `onError(error)` for every
 * request that got none. Resolves with autocannon's result.
 */
function weightedLoad({ base, connections, rate, seconds, cases, onAnswer, onError }) {
  const total = cases.reduce((sum, c) => sum + c.weight, 0);
  const pick = () => {
    let r = Math.random() * total;
    for (const c of cases) if ((r -= c.weight) < 0) return c;
    return cases.at(-1);
  };
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: base,
        connections,
        overallRate: rate,
        duration: seconds,
        requests: [
          {
            setupRequest: (request, context) => {
              const c = pick();
              context.label = c.label;
              context.sent = performance.now();
              return { ...request, method: c.method, path: c.path(), headers: { ...request.headers, ...c.headers }, body: c.body };
            },
            onResponse: (status, _body, context) => onAnswer(context.label, performance.now() - context.sent, status >= 200 && status < 300, status),
          },
        ],
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
    instance.on('reqError', onError);
  });
}

/** Failures counted by request and what went wrong: `fail(label, what)`, and `text()`: "3× GET logs: 503; …", most first. */
function failureTally() {
  const failures = new Map();
  return {
    fail(label, what) {
      const key = `${label}: ${what}`;
      failures.set(key, (failures.get(key) ?? 0) + 1);
    },
    text: () => [...failures].sort((a, b) => b[1] - a[1]).map(([what, n]) => `${n}× ${what}`).join('; '),
  };
}

/**
 * The warm-up: `cases` at `rate` over `connections` for `seconds`, each request drawn by weight as
 * in the soak; answers its throughput, p99 and failures, with which requests failed and how
 * (`byCase`; nothing when `seconds` is 0).
 */
async function warmUp({ base, rate, connections, seconds, cases }) {
  if (seconds <= 0) return undefined;
  const latencies = [];
  const failures = failureTally();
  let failed = 0;
  await weightedLoad({
    base,
    connections,
    rate,
    seconds,
    cases,
    onAnswer: (label, ms, ok, status) => {
      latencies.push(ms);
      if (!ok) {
        failed++;
        failures.fail(label, status);
      }
    },
    onError: (error) => {
      failed++;
      failures.fail('request error', error.code ?? error.message);
    },
  });
  const sorted = Float64Array.from(latencies).sort();
  return { seconds, rps: latencies.length / seconds, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), failed, byCase: failures.text() };
}

export async function runSoak({ base, pid, metrics, settings, cases, flows = [], requireSteady = false }) {
  const { seconds, rate, connections, flowRate } = settings;
  const warm = await warmUp({ base, rate, connections, seconds: settings.warmup ?? 0, cases });
  if (warm) log(`soak: warm-up of ${warm.seconds} s: ${Math.round(warm.rps)} req/s, p50 ${warm.p50.toFixed(1)} / p99 ${warm.p99.toFixed(1)} ms, ${warm.failed} failed (not counted)${warm.byCase ? `: ${warm.byCase}` : ''}`);
  const started = performance.now();
  const minuteOf = () => Math.floor((performance.now() - started) / MINUTE_MS);
  const minutes = [];
  const minute = (m) => (minutes[m] ??= { latencies: [], requests: 0, failed: 0 });
  const failures = failureTally();
  const { fail } = failures;
  // Each case's latencies too, by minute: which request is slow, which one failed, which one drifts.
  const byCase = new Map();
  const record = (ms, ok, label) => {
    const at = minuteOf();
    const m = minute(at);
    m.requests++;
    m.latencies.push(ms);
    if (!ok) m.failed++;
    if (label === undefined) return;
    let c = byCase.get(label);
    if (!c) byCase.set(label, (c = { minutes: [], failed: 0 }));
    if (Number.isFinite(ms)) (c.minutes[at] ??= []).push(ms);
    if (!ok) c.failed++;
  };

  // Memory, every SAMPLE_SECONDS from the start; one sample before the load as the baseline shown.
  const baseline = await memoryOf({ pid, metrics });
  log(`soak: memory from ${baseline.source}${Number.isFinite(baseline.heap) ? '' : ' (RSS only: the heap needs /metrics)'}; ${memoryText(baseline)} before the load`);
  const samples = [];
  const sampler = setInterval(() => {
    const t = (performance.now() - started) / 1000;
    const m = minute(minuteOf());
    const sent = minutes.reduce((sum, x) => sum + x.requests, 0);
    memoryOf({ pid, metrics }).then(
      (memory) => {
        samples.push({ t, ...memory });
        log(`soak ${Math.round(t)} s: ${memoryText(memory)}; ${sent} answers so far, ${m.failed} failed this minute`);
      },
      (error) => log(`soak: memory sample failed: ${error.message}`),
    );
  }, SAMPLE_SECONDS * 1000);

  // The steady mix: each request drawn by weight.
  const cannon = weightedLoad({
    base,
    connections,
    rate,
    seconds,
    cases,
    onAnswer: (label, ms, ok, status) => {
      record(ms, ok, label);
      if (!ok) fail(label, status);
    },
    onError: (error) => {
      record(NaN, false);
      fail('request error', error.code ?? error.message);
    },
  });

  // The write flows, started at flowRate per second, each on its own.
  const request = async (label, method, path, { token, body } = {}) => {
    const t0 = performance.now();
    let response;
    try {
      response = await fetch(base + path, {
        method,
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (error) {
      record(performance.now() - t0, false, label);
      fail(label, error.cause?.code ?? error.message);
      throw error;
    }
    const text = await response.text();
    record(performance.now() - t0, response.ok, label);
    if (!response.ok) {
      fail(label, `${response.status} ${text.slice(0, 120)}`);
      throw new Error(`${label}: ${response.status}`);
    }
    return text ? JSON.parse(text) : undefined;
  };
  const inFlight = new Set();
  let flowsStarted = 0;
  let flowsDone = 0;
  const launcher =
    flows.length === 0
      ? undefined
      : setInterval(() => {
          if (performance.now() - started >= seconds * 1000) return;
          const flow = flows[flowsStarted++ % flows.length];
          const running = flow(request, flowsStarted).then(
            () => flowsDone++,
            () => {},
          );
          inFlight.add(running);
          running.finally(() => inFlight.delete(running));
        }, 1000 / flowRate);

  try {
    await cannon;
  } finally {
    if (launcher) clearInterval(launcher);
    await Promise.all(inFlight);
    clearInterval(sampler);
  }
  // The last sample at the end of the load, so that the last third has its own even in a short run.
  samples.push({ t: (performance.now() - started) / 1000, ...(await memoryOf({ pid, metrics })) });

  const rows = [];
  const table = [];
  /** Each whole minute's throughput and p99, for the steadiness verdict. */
  const whole = [];
  // A sample belongs to the minute it ends (the one taken at 60 s to the first); the last one, at the very end, to the last.
  const lastSampleMinute = Math.ceil(seconds / 60) - 1;
  const minuteOfSample = (s) => Math.min(lastSampleMinute, Math.max(0, Math.ceil(s.t / 60 - 0.01) - 1));
  for (let m = 0; m < minutes.length; m++) {
    const entry = minute(m);
    const span = Math.min(60, seconds - m * 60);
    if (span <= 0) continue;
    const sorted = Float64Array.from(entry.latencies.filter(Number.isFinite)).sort();
    const inMinute = samples.filter((s) => minuteOfSample(s) === m);
    const range = (field) => {
      const values = inMinute.map((x) => x[field]).filter(Number.isFinite);
      return values.length === 0 ? 'n/a' : `${mib(Math.min(...values))} – ${mib(Math.max(...values))}`;
    };
    if (span === 60) whole.push({ minute: m + 1, rps: entry.requests / span, p99: percentile(sorted, 0.99) });
    // The time the server's background jobs ran in the minute: from the last sample before it (the
    // baseline for the first) to the minute's last.
    const before = m === 0 ? baseline : samples.filter((x) => minuteOfSample(x) < m && x.jobs).at(-1);
    const end = inMinute.filter((x) => x.jobs).at(-1);
    const jobs =
      before?.jobs && end?.jobs
        ? Object.entries(end.jobs)
            .map(([job, total]) => [job, total - (before.jobs[job] ?? 0)])
            .filter(([, ran]) => ran >= 0.05)
            .sort((a, b) => b[1] - a[1])
            .map(([job, ran]) => `${job} ${ran.toFixed(1)}`)
            .join(', ') || 'none'
        : 'n/a';
    table.push([
      `${m + 1}`,
      `${Math.round(entry.requests / span)}`,
      `${percentile(sorted, 0.5).toFixed(1)}`,
      `${percentile(sorted, 0.99).toFixed(1)}`,
      `${entry.failed}`,
      range('rss'),
      range('heap'),
      jobs,
    ]);
  }
  // Each request in the first and the last whole minute too: which one the run's drift is in.
  const [firstWhole, lastWhole] = [whole[0], whole.at(-1)];
  const inMinute = (c, w) => {
    const sorted = Float64Array.from(w ? (c.minutes[w.minute - 1] ?? []) : []).sort();
    return sorted.length === 0 ? 'n/a' : `${percentile(sorted, 0.5).toFixed(1)} / ${percentile(sorted, 0.99).toFixed(1)}`;
  };
  const perCase = [...byCase]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([label, c]) => {
      const sorted = Float64Array.from(c.minutes.flat()).sort();
      return [label, `${sorted.length}`, percentile(sorted, 0.5).toFixed(1), percentile(sorted, 0.99).toFixed(1), inMinute(c, firstWhole), inMinute(c, lastWhole), `${c.failed}`];
    });
  const requests = minutes.reduce((sum, m) => sum + m.requests, 0);
  const all = Float64Array.from(minutes.flatMap((m) => m.latencies.filter(Number.isFinite))).sort();
  const failed = minutes.reduce((sum, m) => sum + m.failed, 0);

  const heap = thirds(samples, seconds, 'heap');
  const rss = thirds(samples, seconds, 'rss');
  const describe = (v) =>
    v
      ? `lowest ${mib(v.first)} → ${mib(v.last)} MiB (${v.growth < 0 ? '−' : '+'}${mib(Math.abs(v.growth))} MiB, ${((v.growth / v.first) * 100).toFixed(1)} %); ` +
        `means ${mib(v.means[0])} → ${mib(v.means[1])} MiB; ${v.n[0]} and ${v.n[1]} samples`
      : 'n/a: no samples in a third';
  const margin = `lowest of the last third ≤ first's + max(${MARGIN.fraction * 100} %, ${mib(MARGIN.bytes)} MiB)`;
  const span = `first third → last, after ${Math.round(warmupSeconds(seconds))} s of warm-up`;
  rows.push([
    `soak ${seconds} s: load (informational)`,
    `${requests} requests (${Math.round(requests / seconds)} req/s of ${rate} asked, ${connections} connections` +
      (flows.length ? `; ${flowsDone} of ${flowsStarted} write flows completed` : '') +
      `), p50 ${percentile(all, 0.5).toFixed(1)} / p99 ${percentile(all, 0.99).toFixed(1)} ms`,
    'steady mixed load',
    'info',
  ]);
  if (warm) {
    rows.push([
      `soak: warm-up before the run, the same mix for ${warm.seconds} s (informational, SOAK_WARMUP_SECONDS)`,
      `${Math.round(warm.rps)} req/s of ${rate} asked, p50 ${warm.p50.toFixed(1)} / p99 ${warm.p99.toFixed(1)} ms, ${warm.failed} non-2xx/errors${warm.byCase ? ` (${warm.byCase})` : ''}`,
      'the instance and the project warm',
      'info',
    ]);
  }
  rows.push([`soak: heap used, ${span} (${samples[0]?.source ?? 'no samples'})`, describe(heap), margin, heap ? (heap.stable ? 'pass' : 'FAIL') : '—']);
  rows.push([`soak: RSS, ${span}`, describe(rss), margin, rss ? (rss.stable ? 'pass' : 'FAIL') : 'FAIL']);
  rows.push(['soak: non-2xx answers and request errors', failed === 0 ? '0' : `${failed}: ${failures.text()}`, '0', failed === 0 ? 'pass' : 'FAIL']);

  // Steady: the last whole minute's throughput and p99 within a fifth of the first's, while the
  // load's own ingest grows the project.
  const [firstMinute, lastMinute] = [whole[0], whole.at(-1)];
  const steady =
    firstMinute && lastMinute && lastMinute !== firstMinute
      ? { rps: lastMinute.rps / firstMinute.rps, p99: lastMinute.p99 / firstMinute.p99 }
      : undefined;
  const steadyOk = steady ? steady.rps >= 0.8 && steady.rps <= 1.2 && steady.p99 <= 1.2 : false;
  rows.push([
    'soak: the last whole minute against the first (throughput, p99)',
    steady
      ? `minute ${lastMinute.minute} / minute ${firstMinute.minute}: ${Math.round(lastMinute.rps)} / ${Math.round(firstMinute.rps)} req/s = ${steady.rps.toFixed(2)}×, ` +
        `p99 ${lastMinute.p99.toFixed(1)} / ${firstMinute.p99.toFixed(1)} ms = ${steady.p99.toFixed(2)}×`
      : 'n/a: fewer than two whole minutes',
    'within 20 %',
    steady ? (steadyOk ? 'pass' : 'FAIL') : '—',
  ]);

  const ok = (heap?.stable ?? true) && Boolean(rss?.stable) && failed === 0 && (!requireSteady || steadyOk);
  return { rows, table, cases: perCase, ok, samples };
}

/** Prints the soak's table per minute, then each request's figures over the run. */
export function printSoakMinutes(printTable, title, soak) {
  printTable(title, soak.table, ['minute', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx/errors', 'RSS MiB (lowest – highest)', 'heap used MiB (lowest – highest)', 'background jobs, s run in the minute']);
  printTable('Soak — by request, over the run', soak.cases, ['request', 'answers', 'p50 ms', 'p99 ms', 'first minute p50 / p99 ms', 'last minute p50 / p99 ms', 'non-2xx/errors']);
}
