// The `ship` phase of the bench (run.mjs): the logtracker CLI (packages/logtracker-client) against
// the log tracker the bench started.
//
//   1. Throughput: BENCH_SHIP_LINES lines (default 200 000) piped into `logtracker ship`, a child
//      process, as fast as it reads them; beside it, the server's own rate for the same logs posted
//      the way the CLI posts them (1 000-entry batches, one at a time, back to back). The CLI must
//      not be the bottleneck: its rate at least 90 % of that reference.
//   2. Memory with the server away: the CLI pointed at a port that takes connections and never
//      answers, fed lines for BENCH_SHIP_STALL_SECONDS (default 30) as fast as it reads them; its
//      peak RSS (VmHWM of /proc/<pid>/status) must stay under 100 MiB: reading stops once a few
//      batches wait, so memory is bounded whatever the input.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { positiveInt } from '../../../scripts/bench-lib.mjs';
import { makeEntries, seededRandom } from './dataset.mjs';

const CLI = fileURLToPath(new URL('../../../packages/logtracker-client/dist/cli.js', import.meta.url));
const LINES = positiveInt('BENCH_SHIP_LINES', 200_000);
const STALL_SECONDS = positiveInt('BENCH_SHIP_STALL_SECONDS', 30);
const BATCH = 1000;
// The CLI's: one batch at a time (the order of the logs of one millisecond is their arrival).
const IN_FLIGHT = 1;
const RATIO_TARGET = 0.9;
const RSS_TARGET_MIB = 100;

const fmt = (n) => Math.round(n).toLocaleString('en').replace(/,/g, ' ');

/** `count` lines of build and service output: a level marker and a message of the data set. */
function linesOf(count) {
  const entries = makeEntries(Math.min(count, 20_000), { random: seededRandom(7) });
  const lines = new Array(count);
  for (let i = 0; i < count; i++) {
    const entry = entries[i % entries.length];
    lines[i] = `${entry.level.toUpperCase()} ${entry.message}`;
  }
  return lines;
}

/** Writes `chunks` to the child's stdin, waiting whenever the pipe is full, then ends it. */
async function feed(stdin, chunks, { until = () => false } = {}) {
  const closed = new Promise((resolve) => stdin.once('close', resolve));
  for (const chunk of chunks()) {
    if (until()) break;
    if (!stdin.write(chunk)) await Promise.race([new Promise((resolve) => stdin.once('drain', resolve)), closed]);
  }
  stdin.end();
}

function runCli(args, env) {
  const child = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH, ...env }, stdio: ['pipe', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  child.stdin.on('error', () => {});
  const exited = new Promise((resolve) => child.once('close', (code) => resolve({ code, stderr })));
  return { child, exited };
}

/** The server's rate for the same logs, posted as the CLI posts them (IN_FLIGHT at a time). */
async function referenceRate(base, projectId, ingestKey, lines) {
  const started = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: IN_FLIGHT }, () => postBatches(() => (next += BATCH) - BATCH)));
  return lines.length / ((performance.now() - started) / 1000);

  async function postBatches(take) {
    for (let i = take(); i < lines.length; i = take()) await postBatch(i);
  }

  async function postBatch(i) {
    const logs = lines.slice(i, i + BATCH).map((line) => {
      const space = line.indexOf(' ');
      const level = line.slice(0, space).toLowerCase();
      return { level, message: line, timestamp: new Date().toISOString(), source: 'bench' };
    });
    const response = await fetch(`${base}/api/projects/${projectId}/logs/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-ingest-key': ingestKey, 'idempotency-key': randomUUID() },
      body: JSON.stringify({ logs }),
    });
    await response.arrayBuffer();
    if (response.status !== 201) throw new Error(`reference batch: ${response.status}`);
  }
}

async function measureThroughput(base, projectId, ingestKey, log) {
  const lines = linesOf(LINES);
  log(`ship: the server's rate for ${fmt(LINES)} logs in ${BATCH}-entry batches, as the CLI sends them`);
  const reference = await referenceRate(base, projectId, ingestKey, lines);
  log(`ship: ${fmt(LINES)} lines piped through logtracker ship`);
  const started = performance.now();
  const { child, exited } = runCli(['ship', '--project', String(projectId)], { LOGTRACKER_URL: base, LOGTRACKER_KEY: ingestKey });
  await feed(child.stdin, function* () {
    for (let i = 0; i < lines.length; i += 10_000) yield `${lines.slice(i, i + 10_000).join('\n')}\n`;
  });
  const { code, stderr } = await exited;
  const seconds = (performance.now() - started) / 1000;
  const delivered = Number(/(\d+) lines in \d+ batches/.exec(stderr)?.[1] ?? 0);
  if (code !== 0 || delivered !== LINES) throw new Error(`logtracker ship exited ${code}, ${delivered} of ${LINES} lines delivered:\n${stderr}`);
  return { rate: LINES / seconds, seconds, reference };
}

/** A port that takes connections and reads requests, and never answers. */
async function blackHole() {
  const sockets = new Set();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.resume();
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

function peakRssMib(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)[1]) / 1024;
}

async function measureStalledMemory(log) {
  log(`ship: ${STALL_SECONDS} s of input into logtracker ship, its server never answering`);
  const hole = await blackHole();
  try {
    const { child, exited } = runCli(['ship', '--project', '1', '--flush-timeout', '1s', '--quiet'], { LOGTRACKER_URL: hole.url, LOGTRACKER_KEY: 'ltk_bench' });
    const lines = linesOf(10_000);
    const chunk = `${lines.join('\n')}\n`;
    let written = 0;
    const deadline = Date.now() + STALL_SECONDS * 1000;
    let peak = 0;
    const sampler = setInterval(() => {
      try {
        peak = Math.max(peak, peakRssMib(child.pid));
      } catch {
        // exited
      }
    }, 250);
    // The CLI stops reading once its queue is full, and the pipe fills: the writes wait, and the
    // wait is cut at the deadline. Then SIGTERM, as a supervisor stops it: it gives up on what it
    // holds after its flush timeout.
    const timer = setTimeout(() => child.stdin.destroy(), STALL_SECONDS * 1000);
    await feed(child.stdin, function* () {
      for (;;) {
        written += lines.length;
        yield chunk;
      }
    }, { until: () => Date.now() > deadline || child.stdin.destroyed });
    clearTimeout(timer);
    peak = Math.max(peak, peakRssMib(child.pid));
    clearInterval(sampler);
    const stopping = performance.now();
    child.kill('SIGTERM');
    const { code, stderr } = await exited;
    const stopSeconds = (performance.now() - stopping) / 1000;
    const lost = Number(/(\d+) of \d+ lines lost/.exec(stderr)?.[1] ?? 0);
    if (code !== 143 || lost === 0) throw new Error(`logtracker ship, stopped while its server was away: exit ${code}, ${lost} lines reported lost:\n${stderr}`);
    return { peak, taken: lost, offered: written, stopSeconds };
  } finally {
    await hole.close();
  }
}

/** The phase's rows for run.mjs's table. */
export async function measureShip({ base, projectId, ingestKey, log }) {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: pnpm --filter @repo/logtracker-client build`);
  const throughput = await measureThroughput(base, projectId, ingestKey, log);
  const memory = await measureStalledMemory(log);
  const ratio = throughput.rate / throughput.reference;
  return [
    [`logtracker ship: ${fmt(LINES)} lines piped, one process`, `${fmt(throughput.rate)} lines/s (${throughput.seconds.toFixed(1)} s)`, `≥ ${RATIO_TARGET * 100} % of the server's rate below`, ratio >= RATIO_TARGET ? 'pass' : 'FAIL'],
    [`batch ingest, ${fmt(BATCH)} entries/request, ${IN_FLIGHT === 1 ? 'one at a time' : `${IN_FLIGHT} in flight`} (as the CLI)`, `${fmt(throughput.reference)} logs/s`, 'reference', '—'],
    [
      `logtracker ship: peak RSS, server never answering, ${STALL_SECONDS} s of input`,
      `${memory.peak.toFixed(1)} MiB (${fmt(memory.taken)} lines read of the ${fmt(memory.offered)} offered; exit ${memory.stopSeconds.toFixed(1)} s after SIGTERM)`,
      `< ${RSS_TARGET_MIB} MiB`,
      memory.peak < RSS_TARGET_MIB ? 'pass' : 'FAIL',
    ],
  ];
}
