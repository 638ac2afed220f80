// The growth phase of `pnpm bench` (BENCH_ONLY=growth): one project grown through the batch route,
// the same reads measured at each size, to show which of them grow with the project.
//
// - BENCH_GROWTH_LOGS (default 4 000 000; 10 000 000 for the full run) is the final size; the
//   reads are measured at 250 000, 1 000 000, 2 000 000, 4 000 000 and 10 000 000 logs up to it.
// - Logs are posted by GROWTH_CLIENTS clients in 1 000-entry batches: 330 message templates (the
//   bench's 30 under 11 subsystems) with variable tokens, each batch one minute of output at a random
//   time of the last 24 h. At each
//   size the ingest rate of the logs just posted is printed, then ANALYZE, then the database
//   settles (the statistics keeper and autovacuum done, a CHECKPOINT, the kernel's pages written
//   out, as before the main reads), then the reads.
// - At each size, WARM_SECONDS of the mixed load first, unmeasured: the instance is new at the first
//   size, and its first requests on each pooled connection (the catalogue of every partition read
//   anew, code not yet compiled) took up to three times as long, which flattered the growth ratios.
// - Each read: GROWTH_WARMUP requests, then GROWTH_SAMPLES sequential ones (p95), the reads taking
//   turns one request at a time. The mixed load
//   is every read in turn from GROWTH_MIXED_CONNECTIONS clients for GROWTH_MIXED_SECONDS.
// - Targets: every read's p95 ≤ 20 ms at 4 000 000 logs (or the final size, when smaller) and ≤ 1.5×
//   its value at 250 000; the mixed throughput there ≥ 0.8× that at 250 000. On PostgreSQL the
//   250 000 compared is a reference measured in the same turns (measureGrowth), not minutes before;
//   a run to 10 000 000 measures the reference beside that size too and shows it, not judged.
// - On PostgreSQL, a bare Fastify + postgres.js endpoint (scripts/bare-reads.mjs) reads a log of the
//   project by its id in the same turns, one request a turn: not judged, the machine's own drift from
//   one size to the next (a read of a few milliseconds whose p95 moves with it moves with the machine,
//   not with the project).
import { positiveInt, timedGet } from '../../../scripts/bench-lib.mjs';
import { jobSeconds, metricValue } from '../../../scripts/bench-soak.mjs';
import { RARE_TEMPLATE, SOURCES, TEMPLATES, WORDS, seededRandom } from './dataset.mjs';

const FINAL = positiveInt('BENCH_GROWTH_LOGS', 4_000_000);
/** The sizes measured; with one alone there is nothing to grow from, and no reference is grown. */
export const SIZES = [250_000, 1_000_000, 2_000_000, 4_000_000, 10_000_000].filter((n) => n < FINAL).concat(FINAL);
/** The size the targets are for; a run beyond it (10 000 000) shows the larger sizes beside, not judged. */
const JUDGED = Math.min(FINAL, 4_000_000);
const GROWTH_CLIENTS = 8;
const BATCH = 1000;
const SAMPLES = positiveInt('BENCH_GROWTH_SAMPLES', 100);
const WARMUP = 10;
const MIXED_CONNECTIONS = 10;
const MIXED_SECONDS = positiveInt('BENCH_GROWTH_MIXED_SECONDS', 10);
const WARM_SECONDS = 5;
const TARGET = { p95: 20, growth: 1.5, mixed: 0.8 };

const SUBSYSTEMS = ['api', 'auth', 'billing', 'cart', 'catalog', 'edge', 'jobs', 'mail', 'orders', 'search', 'storage'];
export const GROWTH_TEMPLATES = SUBSYSTEMS.flatMap((s) => TEMPLATES.map((t) => `[${s}] ${t}`));
/** Words of the searches: ~10 % of logs, 0.12 %, 0.002 % (80 logs in 4 million), none. */
export const GROWTH_TERMS = { common: 'timeout', uncommon: 'deadlock', rare: 'checksum', none: 'zebrafish' };
const UNCOMMON_SHARE = 0.0012;
const RARE_TOKEN_TEMPLATE = 'Checksum mismatch in segment %5$s of archive %1$s';
const RARE_TOKEN_SHARE = 0.00002;
const LEVELS = [
  [0.7, 'info'],
  [0.85, 'debug'],
  [0.95, 'warning'],
  [1, 'error'],
];

function fill(template, args) {
  return template.replace(/%(\d)\$s/g, (_, n) => String(args[Number(n) - 1]));
}

/**
 * A batch body of BATCH entries, as a job or a service ships them: the output of one minute, at a
 * random time of the 24 h before now, so that the project's logs cover the last day at every size.
 */
function growthBatch(random) {
  const minuteStart = Date.now() - 60_000 - Math.floor(random() * (86_400_000 - 60_000));
  const pick = (list, r = random()) => list[Math.floor(r * list.length)];
  const logs = [];
  for (let i = 0; i < BATCH; i++) {
    const hex = Math.floor(random() * 0xffffffff).toString(16).padStart(8, '0');
    const args = [1 + Math.floor(random() * 999_999), `10.${Math.floor(random() * 256)}.${Math.floor(random() * 256)}.${Math.floor(random() * 256)}`, 1 + Math.floor(random() * random() * 5000), pick(WORDS, random() ** 3), hex];
    const r = random();
    const template = r < RARE_TOKEN_SHARE ? RARE_TOKEN_TEMPLATE : r < RARE_TOKEN_SHARE + UNCOMMON_SHARE ? RARE_TEMPLATE : pick(GROWTH_TEMPLATES);
    const l = random();
    logs.push({
      level: LEVELS.find(([share]) => l < share)[1],
      message: fill(template, args),
      source: pick(SOURCES),
      timestamp: new Date(minuteStart + Math.floor(random() * 60_000)).toISOString(),
      ...(random() < 0.5 ? { context: { request_id: hex, user_id: args[0] } } : {}),
    });
  }
  return JSON.stringify({ logs });
}

/** Posts `count` logs with GROWTH_CLIENTS clients; the logs per second. */
async function grow(base, projectId, key, count, random) {
  let left = Math.ceil(count / BATCH);
  const start = performance.now();
  const client = async () => {
    while (left-- > 0) {
      const response = await fetch(`${base}/api/projects/${projectId}/logs/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-ingest-key': key },
        body: growthBatch(random),
      });
      if (!response.ok) throw new Error(`growth batch: ${response.status} ${(await response.text()).slice(0, 200)}`);
      await response.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: GROWTH_CLIENTS }, client));
  return (Math.ceil(count / BATCH) * BATCH) / ((performance.now() - start) / 1000);
}

const get = (base, path, token) => timedGet(base + path, token);

const p = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];

/** The reads, by name: paths against the project as it is now. */
async function readPaths(base, token, projectId) {
  const logs = `/api/projects/${projectId}/logs`;
  const first = (await get(base, `${logs}?per_page=50`, token)).body;
  const hourAgo = encodeURIComponent(new Date(Date.now() - 3_600_000).toISOString());
  const ids = first.data.map((l) => l.id);
  let i = 0;
  return {
    'first page': () => logs,
    'level=error': () => `${logs}?level=error`,
    'cursor page': () => `${logs}?cursor=${encodeURIComponent(first.meta.next_cursor)}`,
    'one log': () => `/api/logs/${ids[i++ % ids.length]}`,
    'stats 1h': () => `/api/projects/${projectId}/stats?time_range=1h`,
    'stats 24h': () => `/api/projects/${projectId}/stats?time_range=24h`,
    'search common word (~10 %)': () => `${logs}?search=${GROWTH_TERMS.common}`,
    'search uncommon word (0.12 %)': () => `${logs}?search=${GROWTH_TERMS.uncommon}`,
    'search rare token (0.002 %)': () => `${logs}?search=${GROWTH_TERMS.rare}`,
    'search for a word no log holds': () => `${logs}?search=${GROWTH_TERMS.none}`,
    'search + level=error': () => `${logs}?search=${GROWTH_TERMS.common}&level=error`,
    'search + last hour': () => `${logs}?search=${GROWTH_TERMS.uncommon}&from_date=${hourAgo}`,
    'offset page 200 (10 000th log)': () => `${logs}?page=200&per_page=50`,
  };
}

/** Every read in turn from MIXED_CONNECTIONS clients for `seconds`: the latencies, sorted, and the rate. */
async function mixed(base, token, all, seconds) {
  const times = [];
  const deadline = performance.now() + seconds * 1000;
  let next = 0;
  const client = async () => {
    while (performance.now() < deadline) times.push((await get(base, all[next++ % all.length](), token)).elapsed);
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: MIXED_CONNECTIONS }, client));
  times.sort((a, b) => a - b);
  return { rps: times.length / ((performance.now() - start) / 1000), p99: p(times, 0.99) };
}

/**
 * p95 of each read, sequential, and the mixed load's throughput and p99. The reads take turns, one
 * request each (after their warm-ups): a second of background work (a maintenance pass, autovacuum
 * of the partition just grown, a checkpoint) falls on every read alike, where reading each 100 times
 * in a row put it all on one read's p95 (stats 24h measured 6.5 / 9.0 / 2.5 / 10.6 ms across sizes).
 * With a `reference` (a project of the first size in a database of its own, on an instance of its
 * own: growthReference), each read of the project is followed by the same read of the reference,
 * and the mixed load runs on each in alternate halves (project, reference, reference, project), so
 * that both are measured at the same moments of the machine.
 */
async function measureAt(base, token, projectId, bare, reference) {
  const paths = await readPaths(base, token, projectId);
  const refPaths = reference && (await readPaths(reference.base, reference.token, reference.projectId));
  await mixed(base, token, Object.values(paths), WARM_SECONDS);
  if (refPaths) await mixed(reference.base, reference.token, Object.values(refPaths), WARM_SECONDS);
  const entries = [];
  for (const [name, path] of Object.entries(paths)) {
    entries.push([name, path, base, token]);
    if (refPaths) entries.push([`${REFERENCE}${name}`, refPaths[name], reference.base, reference.token]);
  }
  if (bare) {
    const one = paths['one log'];
    entries.push([BARE_READ, () => one(), bare, token]);
  }
  for (let i = 0; i < WARMUP; i++) for (const [, path, at, auth] of entries) await get(at, path(), auth);
  const times = Object.fromEntries(entries.map(([name]) => [name, []]));
  const bodies = {};
  for (let i = 0; i < SAMPLES; i++) {
    for (const [name, path, at, auth] of entries) {
      const r = await get(at, path(), auth);
      times[name].push(r.elapsed);
      bodies[name] = r.body;
    }
  }
  const all = {};
  for (const [name] of entries) {
    const sorted = times[name].sort((a, b) => a - b);
    all[name] = { p95: p(sorted, 0.95), p50: p(sorted, 0.5), total: bodies[name].meta?.total, estimated: bodies[name].meta?.total_is_estimate };
  }
  const reads = Object.fromEntries(Object.entries(all).filter(([name]) => !name.startsWith(REFERENCE)));
  if (!refPaths) return { reads, mixed: await mixed(base, token, Object.values(paths), MIXED_SECONDS) };
  const referenceReads = Object.fromEntries(Object.keys(paths).map((name) => [name, all[`${REFERENCE}${name}`]]));
  const half = Math.max(1, MIXED_SECONDS / 2);
  const runs = [];
  for (const [at, auth, list] of [[base, token, paths], [reference.base, reference.token, refPaths], [reference.base, reference.token, refPaths], [base, token, paths]]) {
    runs.push(await mixed(at, auth, Object.values(list), half));
  }
  const both = (a, b) => ({ rps: (a.rps + b.rps) / 2, p99: Math.max(a.p99, b.p99) });
  return { reads, mixed: both(runs[0], runs[3]), referenceReads, referenceMixed: both(runs[1], runs[2]) };
}

/** The reference's reads are named by this prefix in the turns (measureAt). */
const REFERENCE = 'reference: ';

/** The bare endpoint's read in the turns (measureAt): a log by its id, as the app's `one log`. */
const BARE_READ = 'the bare endpoint, one log (reference)';

/**
 * Grows a project of its own to BENCH_GROWTH_LOGS, measuring at each size; pushes one row per read
 * (p95 at each size, growth, verdict), the mixed load's and the ingest rate's.
 *
 * The machine's own speed drifts between sizes measured minutes apart: the bare endpoint's p50
 * read a log in 1.7 ms at one moment and 2.7 ms ten minutes later, the app's first page of a
 * 250 000-log project 2.4 ms and 4.2 ms, with the same code and data. A ratio of two such figures
 * measures the machine as much as the project. So, with a `reference` (an instance on a database
 * of its own: growthReference in run.mjs), a project of the first size is grown there first, the
 * same logs, and left as it is; at the final size its reads take the same turns as the project's
 * (measureAt), and the growth judged is the final size's p95 over the reference's, measured at the
 * same moments. The ratio to the first size measured minutes before is printed beside it.
 */
export async function measureGrowth(rows, { base, bare, token, sql, log, fmt, metricsToken, settle = async () => {}, reference }) {
  // What the instance did besides the reads, logged with each size's (from /metrics): the seconds
  // its background jobs and its collections (minor, major) ran, and its heap. Either could put work
  // on the reads' p95 at one size and not another; so far neither grew with the project.
  const busy = async () => {
    if (!metricsToken) return { seconds: {}, heapMiB: NaN };
    const response = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } });
    if (!response.ok) return { seconds: {}, heapMiB: NaN };
    const text = await response.text();
    const gc = Object.fromEntries([...text.matchAll(/^nodejs_gc_duration_seconds_sum\{[^}]*kind="([^"]+)"[^}]*\} ([0-9.e+-]+)/gm)].map(([, kind, v]) => [`gc ${kind}`, Number(v)]));
    return { seconds: { ...jobSeconds(text), ...gc }, heapMiB: metricValue(text, 'nodejs_heap_size_used_bytes') / 1048576 };
  };
  const project = async (at, auth) => {
    const call = async (method, path, body) => {
      const response = await fetch(at + path, { method, headers: { 'content-type': 'application/json', authorization: `Bearer ${auth}` }, body: JSON.stringify(body) });
      if (!response.ok) throw new Error(`${method} ${path}: ${response.status}`);
      return (await response.json()).data;
    };
    const id = (await call('POST', '/api/projects', { name: 'bench-growth' })).id;
    return { id, key: (await call('POST', `/api/projects/${id}/ingest-keys`, { name: 'growth' })).key };
  };
  let referenceAt;
  if (reference) {
    // The reference: the first size's logs, as the project gets them (the same seed), in a
    // database of its own that nothing adds to afterwards; the first size's settling covers it.
    const { id, key } = await project(reference.base, reference.token);
    log(`growth: posting ${fmt(SIZES[0])} logs to the reference (a database of its own)`);
    await grow(reference.base, id, key, SIZES[0], seededRandom(7));
    await reference.sql`analyze logs`;
    referenceAt = { ...reference, projectId: id };
  }
  const { id: projectId, key } = await project(base, token);
  const random = seededRandom(7);
  const at = [];
  let size = 0;
  for (const target of SIZES) {
    log(`growth: posting ${fmt(target - size)} logs (to ${fmt(target)})`);
    const rate = await grow(base, projectId, key, target - size, random);
    size = target;
    if (sql) await sql`analyze logs`;
    // What follows ingest settles first (the app's statistics keeper analyses the partitions a
    // burst grew 11 s after its last batch; autovacuum), as it would between a burst and a search.
    await settle();
    const beside = (target === JUDGED || target === FINAL) && referenceAt;
    log(`growth: ${fmt(rate)} logs/s; reads at ${fmt(size)} logs${beside ? `, beside the reference's ${fmt(SIZES[0])}` : ''}`);
    const before = await busy();
    const measured = await measureAt(base, token, projectId, bare, beside ? referenceAt : undefined);
    const after = await busy();
    const ran = Object.entries(after.seconds).map(([job, s]) => [job, s - (before.seconds[job] ?? 0)]).filter(([, s]) => s >= 0.005);
    const heap = Number.isFinite(before.heapMiB) ? `; heap used ${before.heapMiB.toFixed(0)} → ${after.heapMiB.toFixed(0)} MiB` : '';
    at.push({ size, rate, ...measured });
    const line = (reads) => Object.entries(reads).map(([n, r]) => `${n} ${r.p50.toFixed(1)}/${r.p95.toFixed(1)}`).join(', ');
    log(`growth at ${fmt(size)} (p50/p95 ms): ${line(measured.reads)}; mixed ${measured.mixed.rps.toFixed(0)} req/s p99 ${measured.mixed.p99.toFixed(0)} ms; background jobs and collections meanwhile: ${ran.length ? ran.map(([job, s]) => `${job} ${s.toFixed(2)} s`).join(', ') : 'none'}${heap}`);
    if (measured.referenceReads) {
      log(`growth: the reference at ${fmt(SIZES[0])} in the same turns (p50/p95 ms): ${line(measured.referenceReads)}; mixed ${measured.referenceMixed.rps.toFixed(0)} req/s p99 ${measured.referenceMixed.p99.toFixed(0)} ms`);
    }
  }
  growthRows(rows, at, fmt);
}

/**
 * The table's rows: each read's p95 at each size and its growth, judged at JUDGED on the reference
 * measured in the same turns where there is one (measureGrowth), else on the first size; a larger
 * final size's growth beside the reference is shown, not judged. Then the mixed load's, and the
 * ingest rate's.
 */
function growthRows(rows, at, fmt) {
  const small = at[0];
  const big = at.find((a) => a.size === JUDGED);
  const last = at.at(-1);
  const beyond = last !== big ? last : undefined;
  const sizes = at.map((a) => fmt(a.size)).join(' / ');
  const side = big.referenceReads ? ` (judged at ${fmt(big.size)} beside ${fmt(small.size)} in the same turns)` : '';
  for (const name of Object.keys(small.reads)) {
    const sequential = big.reads[name].p95 / small.reads[name].p95;
    const series = `${at.map((a) => a.reads[name].p95.toFixed(1)).join(' / ')} ms`;
    if (name === BARE_READ) {
      rows.push([
        `growth, ${name}: p95 at ${sizes} logs`,
        `${series} (p50 ${at.map((a) => a.reads[name].p50.toFixed(1)).join(' / ')}): ${sequential.toFixed(2)}×`,
        'the machine (informational)',
        'info',
      ]);
      continue;
    }
    const ref = big.referenceReads?.[name];
    const growth = ref ? big.reads[name].p95 / ref.p95 : sequential;
    const ok = big.reads[name].p95 <= TARGET.p95 && growth <= TARGET.growth;
    const total = big.reads[name].total === undefined ? '' : `; total at ${fmt(big.size)}: ${fmt(big.reads[name].total)}${big.reads[name].estimated ? ' (estimated)' : ''}`;
    const further = beyond?.referenceReads
      ? `; at ${fmt(beyond.size)} (not judged) ${beyond.referenceReads[name].p95.toFixed(1)} → ${beyond.reads[name].p95.toFixed(1)} ms: ${(beyond.reads[name].p95 / beyond.referenceReads[name].p95).toFixed(2)}×`
      : '';
    const figure = ref
      ? `${series}: ${sequential.toFixed(2)}×; same turns ${ref.p95.toFixed(1)} → ${big.reads[name].p95.toFixed(1)} ms: ${growth.toFixed(2)}×${total}${further}`
      : `${series}: ${growth.toFixed(2)}×${total}`;
    rows.push([`growth, ${name}: p95 at ${sizes} logs${side}`, figure, `≤ ${TARGET.p95} ms, ≤ ${TARGET.growth}×`, ok ? 'pass' : 'FAIL']);
  }
  const sequentialMixed = big.mixed.rps / small.mixed.rps;
  const mixedRatio = big.referenceMixed ? big.mixed.rps / big.referenceMixed.rps : sequentialMixed;
  const mixedSeries = `${at.map((a) => a.mixed.rps.toFixed(0)).join(' / ')} req/s (p99 ${at.map((a) => a.mixed.p99.toFixed(0)).join(' / ')} ms)`;
  const mixedFurther = beyond?.referenceMixed
    ? `; at ${fmt(beyond.size)} (not judged) ${beyond.referenceMixed.rps.toFixed(0)} → ${beyond.mixed.rps.toFixed(0)} req/s: ${(beyond.mixed.rps / beyond.referenceMixed.rps).toFixed(2)}×`
    : '';
  rows.push([
    `growth, mixed reads (${MIXED_CONNECTIONS} connections, ${MIXED_SECONDS} s) at ${sizes} logs${side}`,
    big.referenceMixed
      ? `${mixedSeries}: ${sequentialMixed.toFixed(2)}×; alternated ${big.referenceMixed.rps.toFixed(0)} → ${big.mixed.rps.toFixed(0)} req/s: ${mixedRatio.toFixed(2)}×${mixedFurther}`
      : `${mixedSeries}: ${mixedRatio.toFixed(2)}×`,
    `≥ ${TARGET.mixed}×`,
    mixedRatio >= TARGET.mixed ? 'pass' : 'FAIL',
  ]);
  rows.push([
    `growth, batch ingest (${GROWTH_CLIENTS} clients, 1 000 entries) up to ${sizes} logs`,
    `${at.map((a) => fmt(a.rate)).join(' / ')} logs/s`,
    'flat (informational)',
    'info',
  ]);
}
