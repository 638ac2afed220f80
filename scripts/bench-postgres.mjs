// A throwaway PostgreSQL server for the bench, started the way .ci/run does: binaries from PATH or
// /usr/lib/postgresql/*/bin, run as an unprivileged account when we are root (PostgreSQL refuses
// root), a data directory in a fresh temporary folder, a free loopback port. Tuned for loading and
// measuring, not for durability. Stopping is synchronous so that it also works from signal and
// exit handlers.
import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { freePort } from './bench-lib.mjs';

const SETTINGS = {
  listen_addresses: '127.0.0.1',
  max_connections: '100',
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
  // A quarter of the memory, as PostgreSQL's own guidance says, up to 4 GB: the growth phase's
  // 4 million logs (1.6 GB with their indexes) are read from PostgreSQL's cache, not the kernel's.
  shared_buffers: `${Math.min(4096, Math.floor(totalmem() / 4 / 1024 / 1024))}MB`,
  max_wal_size: '4GB',
  checkpoint_timeout: '30min',
  // Used by VACUUM (which flushes the trigram index's pending list after the load) and index builds.
  maintenance_work_mem: '512MB',
};

function which(name) {
  const result = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

function realDir(file) {
  return dirname(execFileSync('readlink', ['-f', file], { encoding: 'utf8' }).trim());
}

/** The folder holding pg_ctl and initdb, or undefined when PostgreSQL is not installed. */
export function findPostgresBin() {
  const pgCtl = which('pg_ctl');
  if (pgCtl && which('initdb')) return realDir(pgCtl);
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).sort((a, b) => b.localeCompare(a, 'en', { numeric: true }));
  for (const version of versions) {
    const bin = join(root, version, 'bin');
    if (existsSync(join(bin, 'pg_ctl')) && existsSync(join(bin, 'initdb'))) return bin;
  }
  return undefined;
}

function userExists(name) {
  return spawnSync('id', [name], { stdio: 'ignore' }).status === 0;
}

function numericId(flag, name) {
  return Number(execFileSync('id', [flag, name], { encoding: 'utf8' }).trim());
}

/**
 * Starts a server; answers { url, version, stop } or undefined when no PostgreSQL is installed.
 * `stop()` is synchronous and idempotent: it stops the server and deletes its folder.
 */
export async function startPostgres({ user = 'bench_postgres' } = {}) {
  const bin = findPostgresBin();
  if (!bin) return undefined;

  const isRoot = process.getuid?.() === 0;
  const pgUser = isRoot ? user : execFileSync('id', ['-un'], { encoding: 'utf8' }).trim();
  if (isRoot && !userExists(pgUser)) {
    execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', pgUser], { stdio: 'inherit' });
  }
  const run = (command, args, options = {}) => {
    const [file, argv] = isRoot ? ['runuser', ['-u', pgUser, '--', command, ...args]] : [command, args];
    return spawnSync(file, argv, { encoding: 'utf8', ...options });
  };

  const folder = mkdtempSync(join(tmpdir(), 'logtracker-bench-pg.'));
  chmodSync(folder, 0o755);
  if (isRoot) chownSync(folder, numericId('-u', pgUser), numericId('-g', pgUser));
  const dataDir = join(folder, 'data');
  const logFile = join(folder, 'server.log');

  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    run(join(bin, 'pg_ctl'), ['-D', dataDir, '-m', 'immediate', '-w', 'stop'], { stdio: 'ignore' });
    rmSync(folder, { recursive: true, force: true });
  };

  try {
    const init = run(join(bin, 'initdb'), ['-D', dataDir, '-U', pgUser, '--auth=trust', '--encoding=UTF8', '--locale=C']);
    if (init.status !== 0) throw new Error(`initdb failed:\n${init.stderr || init.stdout}`);
    const port = await freePort();
    const options = [`-p ${port}`, `-k ${folder}`, ...Object.entries(SETTINGS).map(([k, v]) => `-c ${k}=${v}`)].join(' ');
    const start = run(join(bin, 'pg_ctl'), ['-D', dataDir, '-l', logFile, '-w', '-t', '60', '-o', options, 'start']);
    if (start.status !== 0) {
      const log = existsSync(logFile) ? readFileSync(logFile, 'utf8') : '';
      throw new Error(`pg_ctl start failed:\n${start.stderr || start.stdout}\n${log}`);
    }
    const version = execFileSync(join(bin, 'postgres'), ['--version'], { encoding: 'utf8' }).trim();
    return { url: `postgres://${pgUser}@127.0.0.1:${port}/postgres`, version, bin, user: pgUser, stop };
  } catch (error) {
    stop();
    throw error;
  }
}
