// Both apps through PostgreSQL failovers, with pg_auto_failover (`pnpm failover`, after `pnpm build`):
// a monitor, a primary and a synchronous secondary on loopback (the monitor tuned to act within a few
// seconds; FAILOVER_MONITOR_DEFAULTS=1 keeps pg_auto_failover's defaults), each app on the multi-host URL `pg_autoctl show uri` prints, writers on each app, then
//   1. a planned failover (`pg_autoctl perform failover`),
//   2. the primary's postmaster killed (SIGKILL; its pg_autoctl restarts it, or fails over),
//   3. the primary node lost (its postgres and its pg_autoctl killed with SIGKILL),
// and after each: every answer 2xx or 503 with Retry-After, no request waiting more than 3 s, the
// writes answered 2xx again within 10 s of the fault; at the end every acknowledged write is stored
// exactly once, and the log tracker restarted after the failovers starts on the new primary.
//
// Writers: the log tracker's log batches (POST /api/projects/:id/logs/batch, one entry each, with an
// Idempotency-Key) and the marketplace's vehicles (POST /api/v1/vehicles, with an Idempotency-Key);
// a 503 is retried with the same key after 250 ms (the apps say Retry-After: 1; the shorter wait
// measures the recovery finely), until it is acknowledged.
//
// pg_auto_failover: `pg_autoctl` from the PATH or /usr/lib/postgresql/<major>/bin, else installed
// with apt-get (Debian's postgresql-<major>-auto-failover) when running as root. PostgreSQL refuses
// to run as root: as root, the clusters run as the unprivileged `ci_postgres` (created if missing).
// Not part of .ci/run: it takes about two minutes.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './bench-lib.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const WRITERS = Number(process.env.FAILOVER_WRITERS ?? 6);
const RETRY_MS = 250;
const SETTLE_SECONDS = Number(process.env.FAILOVER_SETTLE_SECONDS ?? 15);
const LIMITS = { waitMs: 3000, recoveryMs: 10_000 };
const log = (message) => console.log(`[failover] ${message}`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// --- PostgreSQL and pg_auto_failover -------------------------------------------------------------

function pgBin() {
  const majors = existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a)) : [];
  for (const major of majors) {
    const dir = `/usr/lib/postgresql/${major}/bin`;
    if (existsSync(join(dir, 'pg_ctl'))) return { dir, major };
  }
  throw new Error('no PostgreSQL binaries under /usr/lib/postgresql: install PostgreSQL first');
}

function findAutoctl(bin) {
  const candidates = [join(bin.dir, 'pg_autoctl'), ...(process.env.PATH ?? '').split(':').map((d) => join(d, 'pg_autoctl'))];
  return candidates.find((path) => existsSync(path));
}

function autoctlPath(bin) {
  let found = findAutoctl(bin);
  if (found) return found;
  if (process.getuid?.() !== 0) throw new Error(`pg_autoctl not found and this user cannot install postgresql-${bin.major}-auto-failover`);
  log(`installing postgresql-${bin.major}-auto-failover with apt-get`);
  execFileSync('apt-get', ['install', '-y', '-qq', `postgresql-${bin.major}-auto-failover`], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, timeout: 300_000 });
  found = findAutoctl(bin);
  if (!found) throw new Error('pg_autoctl still not found after installing the package');
  return found;
}

const asRoot = process.getuid?.() === 0;
const PG_USER = asRoot ? 'ci_postgres' : (process.env.USER ?? 'postgres');
if (asRoot) {
  try {
    execFileSync('id', [PG_USER], { stdio: 'ignore' });
  } catch {
    execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', PG_USER]);
  }
}
/** A command as the account PostgreSQL runs as. */
const asPg = (cmd, args) => (asRoot ? ['runuser', ['-u', PG_USER, '--', cmd, ...args]] : [cmd, args]);

function runPg(cmd, args, options = {}) {
  const [c, a] = asPg(cmd, args);
  return execFileSync(c, a, { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** The same, without blocking the writers (they run in this process): the long commands. */
function runPgAsync(cmd, args, options = {}) {
  const [c, a] = asPg(cmd, args);
  return new Promise((resolve, reject) =>
    execFile(c, a, { encoding: 'utf8', timeout: 120_000, env: { ...process.env, ...options.env } }, (error, stdout) => (error ? reject(error) : resolve(stdout))),
  );
}

const children = new Set();
function spawnPg(cmd, args, logFile, env = {}) {
  const [c, a] = asPg(cmd, args);
  const child = spawn('sh', ['-c', `exec "$@" >>${logFile} 2>&1`, 'sh', c, ...a], { env: { ...process.env, ...env }, stdio: 'ignore', detached: true });
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}


async function until(what, check, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(500);
  }
}

// --- the apps ------------------------------------------------------------------------------------

async function startApp(name, port, env, logFile) {
  const appDir = join(ROOT, 'apps', name);
  const child = spawn('sh', ['-c', `exec node dist/server.js >>${logFile} 2>&1`], {
    cwd: appDir,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: 'ignore',
  });
  children.add(child);
  const exited = new Promise((resolve) => child.on('exit', (code) => (children.delete(child), resolve(code))));
  const base = `http://127.0.0.1:${port}`;
  const prefix = name === 'marketplace-api' ? '/api/v1' : '/api';
  await Promise.race([
    until(`${name} ready`, async () => (await fetch(`${base}${prefix}/health/ready`)).ok, 90_000),
    exited.then((code) => Promise.reject(new Error(`${name} exited with ${code} during start-up (see ${logFile})`))),
  ]);
  return { child, base, exited };
}

async function stopApp(app) {
  app.child.kill('SIGTERM');
  await Promise.race([app.exited, sleep(12_000)]);
}

async function call(base, method, path, { body, token, headers = {} } = {}) {
  const response = await fetch(base + path, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json().catch(() => undefined);
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

/**
 * A writer: one write at a time, each retried with its key until acknowledged. Every answer is
 * recorded (when it was sent and answered, its status, whether it carried Retry-After).
 */
function writer(id, send, answers, acknowledged, state) {
  return (async () => {
    for (let seq = 1; !state.stopped; seq++) {
      const key = `w${id}-${seq}`;
      for (;;) {
        const sent = performance.now();
        let status;
        let retryAfter = false;
        try {
          const response = await send(key);
          status = response.status;
          retryAfter = response.headers.has('retry-after');
          await response.arrayBuffer();
        } catch {
          status = -1; // no answer: the connection failed
        }
        answers.push({ sent, answered: performance.now(), status, retryAfter });
        if (status >= 200 && status < 300) {
          acknowledged.push(key);
          break;
        }
        if (state.stopped && status !== 503) break;
        await sleep(RETRY_MS);
      }
      await sleep(20);
    }
  })();
}

/**
 * A phase's answers: allowed are 2xx, 503 with Retry-After, and 409 with Retry-After (the key's
 * first request is still counted as running: its claim was taken before the outage); anything else
 * (500, no answer) is a failure of the check. "2xx again": the first 2xx after the first refusal;
 * "last refusal": the end of the outage for the slowest writer.
 */
function phaseFigures(answers, faultAt, endAt) {
  const inPhase = answers.filter((a) => a.answered >= faultAt && a.sent < endAt);
  const ok = (a) => a.status >= 200 && a.status < 300;
  const allowed = (a) => ok(a) || ((a.status === 503 || a.status === 409) && a.retryAfter);
  const refused = inPhase.filter((a) => !ok(a));
  const firstRefusal = refused.length ? Math.min(...refused.map((a) => a.answered)) : faultAt;
  const againAt = inPhase.find((a) => ok(a) && a.answered >= firstRefusal)?.answered;
  const bad = inPhase.filter((a) => !allowed(a));
  return {
    answers: inPhase.length,
    ok: inPhase.filter(ok).length,
    unavailable: inPhase.filter((a) => a.status === 503).length,
    inProgress: inPhase.filter((a) => a.status === 409).length,
    other: bad.length,
    otherStatuses: [...new Set(bad.map((a) => a.status))].join(',') || '—',
    longestMs: Math.round(Math.max(0, ...inPhase.map((a) => a.answered - a.sent))),
    firstRefusalMs: refused.length ? Math.round(firstRefusal - faultAt) : null,
    againMs: againAt === undefined ? Infinity : Math.round(againAt - faultAt),
    lastRefusalMs: refused.length ? Math.round(Math.max(...refused.map((a) => a.answered)) - faultAt) : null,
  };
}

// --- the run -------------------------------------------------------------------------------------

async function main() {
  const bin = pgBin();
  const autoctl = autoctlPath(bin);
  log(`PostgreSQL ${bin.major} (${bin.dir}), ${execFileSync(autoctl, ['version'], { encoding: 'utf8' }).split('\n')[0]}`);
  for (const app of ['marketplace-api', 'logtracker-api']) {
    if (!existsSync(join(ROOT, 'apps', app, 'dist', 'server.js'))) throw new Error(`apps/${app}/dist/server.js is missing: run pnpm build first`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'failover-'));
  chmodSync(dir, 0o777);
  log(`working in ${dir} (logs: *.log)`);
  const pgctl = join(bin.dir, 'pg_ctl');
  const [monitorPort, port1, port2, marketPort, logsPort] = await Promise.all(Array.from({ length: 5 }, freePort));
  // Sockets in the working directory (PostgreSQL's default one belongs to the postgres account).
  const pgEnv = { XDG_CONFIG_HOME: join(dir, 'config'), XDG_DATA_HOME: join(dir, 'data'), PG_REGRESS_SOCK_DIR: dir };
  const cleanup = () => {
    for (const child of children) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }
    for (const name of ['monitor', 'node1', 'node2']) {
      try {
        runPg(pgctl, ['-D', join(dir, name), '-m', 'immediate', 'stop']);
      } catch {
        // not running
      }
    }
    // A postmaster killed with its pg_autoctl can leave its background workers running (the
    // monitor's health checks): every process still working in the directory goes too.
    for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
      try {
        if (readlinkSync(`/proc/${pid}/cwd`).startsWith(dir)) process.kill(Number(pid), 'SIGKILL');
      } catch {
        // gone, or not ours to read
      }
    }
    if (!process.env.FAILOVER_KEEP) rmSync(dir, { recursive: true, force: true });
  };
  process.on('SIGINT', () => (cleanup(), process.exit(130)));
  process.on('SIGTERM', () => (cleanup(), process.exit(143)));

  const results = [];
  const checks = [];
  try {
    log(`monitor on 127.0.0.1:${monitorPort}`);
    const common = ['--pgctl', pgctl, '--hostname', '127.0.0.1', '--auth', 'trust', '--no-ssl'];
    spawnPg(autoctl, ['create', 'monitor', '--pgdata', join(dir, 'monitor'), '--pgport', String(monitorPort), ...common, '--run'], join(dir, 'monitor.log'), pgEnv);
    const monitorUri = `postgres://autoctl_node@127.0.0.1:${monitorPort}/pg_auto_failover?sslmode=disable`;
    const monitorSql = (query) => runPg(join(bin.dir, 'psql'), ['-h', '127.0.0.1', '-p', String(monitorPort), '-d', 'pg_auto_failover', '-At', '-c', query]).trim();
    await until('the monitor', () => monitorSql('select 1') === '1');
    // Act within seconds, not the defaults' 20 s (unhealthy) and 30 s (demote timeout).
    for (const [name, value] of process.env.FAILOVER_MONITOR_DEFAULTS ? [] : [
      ['pgautofailover.health_check_period', '1000'],
      ['pgautofailover.health_check_timeout', '1000'],
      ['pgautofailover.health_check_max_retries', '1'],
      ['pgautofailover.health_check_retry_delay', '500'],
      ['pgautofailover.node_considered_unhealthy_timeout', '3000'],
      ['pgautofailover.primary_demote_timeout', '3000'],
    ]) {
      monitorSql(`alter system set ${name} = ${value}`);
    }
    monitorSql('select pg_reload_conf()');

    const createNode = (name, port) =>
      spawnPg(
        autoctl,
        ['create', 'postgres', '--pgdata', join(dir, name), '--pgport', String(port), ...common, '--listen', '127.0.0.1', '--pghost', dir, '--dbname', 'platform', '--monitor', monitorUri, '--name', name, '--run'],
        join(dir, `${name}.log`),
        pgEnv,
      );
    const nodeStates = () =>
      Object.fromEntries(
        monitorSql("select nodename, reportedstate || '/' || goalstate from pgautofailover.node order by nodeid")
          .split('\n')
          .filter(Boolean)
          .map((line) => line.split('|')),
      );
    log(`primary node1 on 127.0.0.1:${port1}`);
    createNode('node1', port1);
    await until('node1 as a single primary', () => nodeStates().node1 === 'single/single');
    log(`secondary node2 on 127.0.0.1:${port2}`);
    createNode('node2', port2);
    await until('node2 as a secondary', () => {
      // pg_autoctl's pg_basebackup waits for the next checkpoint (minutes away on an idle server).
      try {
        runPg(join(bin.dir, 'psql'), ['-h', '127.0.0.1', '-p', String(port1), '-d', 'platform', '-c', 'checkpoint']);
      } catch {
        // not yet accepting connections
      }
      const s = nodeStates();
      return s.node1 === 'primary/primary' && s.node2 === 'secondary/secondary';
    });
    const stable = () => {
      const s = Object.values(nodeStates());
      return s.includes('primary/primary') && s.includes('secondary/secondary');
    };
    // By the monitor's goal: a lost node keeps reporting the state it had.
    const primaryName = () => Object.entries(nodeStates()).find(([, s]) => ['primary', 'wait_primary'].includes(s.split('/')[1]))?.[0];
    // The URI names no user (libpq's default, the OS account): the apps connect as the clusters' owner.
    const shown = runPg(autoctl, ['show', 'uri', '--formation', 'default', '--pgdata', join(dir, 'monitor')], { env: pgEnv }).trim();
    const uri = shown.includes('@') ? shown : shown.replace('postgres://', `postgres://${PG_USER}@`);
    log(`apps on ${uri}`);

    const appEnv = {
      DATABASE_URL: uri,
      NODE_ENV: 'development',
      LOG_LEVEL: 'warn',
      PASSWORD_HASH_COST: 'low',
      RATE_LIMIT_AUTHENTICATED: '1000000',
      RATE_LIMIT_PUBLIC: '1000000',
      RATE_LIMIT_INGEST: '1000000',
      RATE_LIMIT_STORE: 'memory',
      SEED_REFERENCE_DATA: 'false',
    };
    const apps = {
      market: await startApp('marketplace-api', marketPort, { ...appEnv, DATA_DIR: join(dir, 'market-data') }, join(dir, 'marketplace-api.log')),
      logs: await startApp('logtracker-api', logsPort, { ...appEnv, DATA_DIR: join(dir, 'logs-data') }, join(dir, 'logtracker-api.log')),
    };
    const password = 'failover-password-1234';
    const client = await call(apps.market.base, 'POST', '/api/v1/auth/register/client', {
      body: { first_name: 'Fail', last_name: 'Over', email: `failover-${Date.now()}@example.test`, password, password_confirmation: password },
    });
    const marketToken = client.data.token;
    const account = await call(apps.logs.base, 'POST', '/api/auth/register', {
      body: { name: 'Failover', email: `failover-${Date.now()}@example.test`, password, password_confirmation: password },
    });
    const project = (await call(apps.logs.base, 'POST', '/api/projects', { body: { name: 'failover' }, token: account.data.token })).data.id;
    const ingestKey = (await call(apps.logs.base, 'POST', `/api/projects/${project}/ingest-keys`, { body: { name: 'failover' }, token: account.data.token })).data.key;

    const sendLog = (key) =>
      fetch(`${apps.logs.base}/api/projects/${project}/logs/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-ingest-key': ingestKey, 'idempotency-key': key },
        body: JSON.stringify({ logs: [{ level: 'info', message: `failover ${key}`, source: 'failover' }] }),
      });
    const sendVehicle = (key) =>
      fetch(`${apps.market.base}/api/v1/vehicles`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${marketToken}`, 'idempotency-key': key },
        body: JSON.stringify({ make: 'Failover', model: key, year: 2020, fuel: 'diesel', mileage: 1000 }),
      });
    const traffic = {
      logs: { answers: [], acknowledged: [] },
      market: { answers: [], acknowledged: [] },
    };
    const state = { stopped: false };
    const running = [];
    for (let i = 0; i < WRITERS; i++) {
      running.push(writer(i, sendLog, traffic.logs.answers, traffic.logs.acknowledged, state));
      running.push(writer(i, sendVehicle, traffic.market.answers, traffic.market.acknowledged, state));
    }
    await sleep(3000);

    const faults = [
      {
        name: 'planned failover (pg_autoctl perform failover)',
        inject: () => runPgAsync(autoctl, ['perform', 'failover', '--formation', 'default', '--group', '0', '--pgdata', join(dir, 'monitor'), '--wait', '60'], { env: pgEnv }),
      },
      {
        name: "primary's postmaster killed (pg_autoctl restarts it)",
        inject: () => {
          const victim = primaryName();
          const postmaster = Number(readFileSync(join(dir, victim, 'postmaster.pid'), 'utf8').split('\n')[0]);
          log(`killing ${victim}'s postmaster (${postmaster})`);
          process.kill(postmaster, 'SIGKILL');
        },
      },
      {
        name: 'primary node lost (postgres and pg_autoctl killed)',
        inject: () => {
          const victim = primaryName();
          const pidFile = join(dir, victim, 'postmaster.pid');
          const postmaster = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
          const keeper = [...children].find((c) => c.spawnargs.join(' ').includes(`--pgdata ${join(dir, victim)} `));
          log(`killing ${victim}: its pg_autoctl and its postmaster (${postmaster})`);
          if (keeper) process.kill(-keeper.pid, 'SIGKILL');
          try {
            process.kill(postmaster, 'SIGKILL');
          } catch {
            // gone with its keeper
          }
        },
      },
    ];
    for (const fault of faults) {
      await until('a stable primary and secondary', stable, 90_000).catch(() => undefined);
      log(`${fault.name}: from ${primaryName()}`);
      const faultAt = performance.now();
      // Not awaited: `perform failover --wait` returns once the new primary is settled.
      const injected = Promise.resolve().then(fault.inject);
      injected.catch((error) => log(`fault: ${String(error.message ?? error).split('\n')[0]}`));
      await sleep(SETTLE_SECONDS * 1000);
      await injected.catch(() => undefined);
      const endAt = performance.now();
      log(`${fault.name}: primary now ${primaryName()} (${JSON.stringify(nodeStates())})`);
      for (const [app, t] of Object.entries(traffic)) {
        const figures = phaseFigures(t.answers, faultAt, endAt);
        results.push({ fault: fault.name, app: app === 'logs' ? 'log tracker' : 'marketplace', ...figures });
      }
    }
    state.stopped = true;
    await Promise.all(running);

    // A restarted app starts on the new primary (migrations, LISTEN) and answers a write.
    log('restarting the log tracker on the new primary');
    await stopApp(apps.logs);
    const restartAt = performance.now();
    apps.logs = await startApp('logtracker-api', logsPort, { ...appEnv, DATA_DIR: join(dir, 'logs-data') }, join(dir, 'logtracker-api.log'));
    const restartMs = Math.round(performance.now() - restartAt);
    const after = await sendLog('after-restart');
    checks.push([`log tracker restarted after the failovers: ready in ${restartMs} ms, a batch answered ${after.status}`, after.status === 201]);
    if (after.status === 201) traffic.logs.acknowledged.push('after-restart');

    // Every acknowledged write stored exactly once (read on the new primary).
    const primaryNow = primaryName();
    const primaryPort = primaryNow === 'node1' ? port1 : port2;
    const count = (query) => runPg(join(bin.dir, 'psql'), ['-h', '127.0.0.1', '-p', String(primaryPort), '-d', 'platform', '-At', '-F', '\t', '-c', query]);
    const stored = (text) => {
      const map = new Map();
      for (const line of text.split('\n').filter(Boolean)) {
        const [key, n] = line.split('\t');
        map.set(key, Number(n));
      }
      return map;
    };
    const logsStored = stored(count(`select substr(message, 10), count(*) from logtracker.logs where project_id = ${project} group by 1`));
    const vehiclesStored = stored(count(`select model, count(*) from marketplace.vehicles where make = 'Failover' group by 1`));
    for (const [name, acknowledged, found] of [
      ['log batches', traffic.logs.acknowledged, logsStored],
      ['vehicles', traffic.market.acknowledged, vehiclesStored],
    ]) {
      const missing = acknowledged.filter((key) => found.get(key) === undefined);
      const twice = [...found].filter(([, n]) => n > 1);
      const listed = (keys) => (keys.length ? ` (${keys.slice(0, 5).join(', ')})` : '');
      checks.push([
        `${name}: ${acknowledged.length} acknowledged, ${missing.length} missing${listed(missing)}, ${twice.length} stored twice${listed(twice.map(([key]) => key))}`,
        missing.length === 0 && twice.length === 0,
      ]);
    }
    await Promise.all([stopApp(apps.logs), stopApp(apps.market)]);
  } finally {
    cleanup();
  }

  for (const r of results) {
    checks.push([
      `${r.fault}, ${r.app}: ${r.other} answers neither 2xx nor 503/409 with Retry-After; longest ${r.longestMs} ms; 2xx again ${r.againMs} ms after the fault`,
      r.other === 0 && r.longestMs <= LIMITS.waitMs && r.againMs <= LIMITS.recoveryMs,
    ]);
  }
  const s = (ms) => (ms === null ? '—' : `${(ms / 1000).toFixed(1)} s`);
  console.log('\n| fault | app | answers | 2xx | 503 | 409 | other | longest request | first refusal | 2xx again | last refusal |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    console.log(
      `| ${r.fault} | ${r.app} | ${r.answers} | ${r.ok} | ${r.unavailable} | ${r.inProgress} | ${r.other}${r.other ? ` (${r.otherStatuses})` : ''} | ${(r.longestMs / 1000).toFixed(2)} s | ${s(r.firstRefusalMs)} | ${s(r.againMs)} | ${s(r.lastRefusalMs)} |`,
    );
  }
  console.log('');
  let failed = 0;
  for (const [text, ok] of checks) {
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${text}`);
    if (!ok) failed++;
  }
  process.exit(failed ? 1 : 0);
}

main().catch((error) => {
  console.error(`[failover] ${error.stack ?? error}`);
  process.exit(1);
});
