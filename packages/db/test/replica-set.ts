import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, chmodSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * A PostgreSQL primary and a hot standby streaming from it (`pg_basebackup -R`), on loopback ports
 * of their own, from the machine's PostgreSQL binaries: what a failover looks like to the app,
 * without a cluster manager. Undefined (the tests skip) when no binaries are found, or when running
 * as root without the unprivileged account CI runs PostgreSQL as.
 */
export interface ReplicaSet {
  primaryPort: number;
  standbyPort: number;
  url(ports: number[], query?: string): string;
  /** Ends recovery on the standby: it becomes a primary of its own. */
  promote(): Promise<void>;
  stop(): Promise<void>;
}

export function findPostgresBin(): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(':')];
  if (existsSync('/usr/lib/postgresql')) {
    const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a));
    dirs.push(...versions.map((v) => join('/usr/lib/postgresql', v, 'bin')));
  }
  return dirs.find((dir) => ['initdb', 'pg_ctl', 'pg_basebackup'].every((tool) => existsSync(join(dir, tool))));
}

/** PostgreSQL refuses to run as root: as root, the tools run as `ci_postgres` (as .ci/run does). */
function runner(): { user: string; as: (cmd: string, args: string[]) => Promise<unknown> } {
  if (process.getuid?.() !== 0) return { user: process.env.USER ?? 'postgres', as: (cmd, args) => run(cmd, args, { timeout: 30_000 }) };
  const account = 'ci_postgres';
  return { user: account, as: (cmd, args) => run('runuser', ['-u', account, '--', cmd, ...args], { timeout: 30_000 }) };
}

async function accountExists(user: string): Promise<boolean> {
  if (process.getuid?.() !== 0) return true;
  return run('id', [user]).then(
    () => true,
    () => false,
  );
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function startReplicaSet(): Promise<ReplicaSet | undefined> {
  const bin = findPostgresBin();
  const exec = runner();
  if (!bin || !(await accountExists(exec.user))) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'db-replica-set-'));
  chmodSync(dir, 0o777);
  const primary = join(dir, 'primary');
  const standby = join(dir, 'standby');
  const [primaryPort, standbyPort] = [await freePort(), await freePort()];
  const options = (port: number) =>
    `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=50`;
  const pgCtl = join(bin, 'pg_ctl');
  await exec.as(join(bin, 'initdb'), ['-D', primary, '-U', exec.user, '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync']);
  await exec.as(pgCtl, ['-D', primary, '-l', join(dir, 'primary.log'), '-w', '-t', '30', '-o', options(primaryPort), 'start']);
  await exec.as(join(bin, 'pg_basebackup'), ['-h', '127.0.0.1', '-p', String(primaryPort), '-U', exec.user, '-D', standby, '-R', '-X', 'stream', '--no-sync', '-c', 'fast']);
  await exec.as(pgCtl, ['-D', standby, '-l', join(dir, 'standby.log'), '-w', '-t', '30', '-o', options(standbyPort), 'start']);
  return {
    primaryPort,
    standbyPort,
    url: (ports, query = '') => `postgres://${exec.user}@${ports.map((p) => `127.0.0.1:${p}`).join(',')}/postgres${query}`,
    promote: async () => {
      await exec.as(pgCtl, ['-D', standby, '-w', '-t', '30', 'promote']);
    },
    stop: async () => {
      for (const data of [standby, primary]) await exec.as(pgCtl, ['-D', data, '-m', 'immediate', 'stop']).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
