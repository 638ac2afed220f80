import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startTestApp } from '@repo/db/testing';
import { eq } from 'drizzle-orm';
import { buildApp } from 'logtracker-api/dist/app.js';
import { loadConfig } from 'logtracker-api/dist/config.js';
import { migrationsFolder, schema } from 'logtracker-api/dist/db/index.js';
import { logs, newestFirst } from 'logtracker-api/dist/db/schema/index.js';
import createClient from 'openapi-fetch';
import { expect } from 'vitest';
import type { paths } from '../src/generated/openapi.js';

/** The built CLI, as `npx logtracker` would run it. */
export const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

export interface StoredLog {
  id: number;
  level: string;
  message: string;
  source: string | null;
  context: Record<string, unknown> | null;
  timestamp: Date;
}

/**
 * The built log tracker listening on a free port, over a fresh database of its own (PGlite in
 * memory, or a new database on the server named by the suite's PostgreSQL variable), with a user
 * who makes projects and ingest keys through the API, using the typed client.
 */
export async function startLogTracker(env: Record<string, string> = {}) {
  const t = await startTestApp({
    database: { schema, migrationsFolder, extensions: ['pg_trgm', 'btree_gin'], customPlanPoolSize: 2 },
    config: () =>
      loadConfig({
        NODE_ENV: 'test',
        LOG_LEVEL: 'silent',
        DATA_DIR: 'memory://',
        PASSWORD_HASH_COST: 'low',
        RATE_LIMIT_AUTHENTICATED: '100000',
        RATE_LIMIT_PUBLIC: '100000',
        RATE_LIMIT_INGEST: '100000',
        ...env,
      }),
    build: (config, database) => buildApp(config, { database }),
  });
  const url = await t.app.listen({ port: 0, host: '127.0.0.1' });
  const api = createClient<paths>({ baseUrl: url });
  const email = `shipper-${Date.now()}@example.test`;
  const password = 'correct horse battery';
  const registered = await api.POST('/api/auth/register', { body: { name: 'Shipper', email, password, password_confirmation: password } });
  expect(registered.response.status, JSON.stringify(registered.error)).toBe(201);
  const authorization = `Bearer ${registered.data!.data.token}`;

  return {
    url,
    database: t.database,
    close: () => t.close(),
    /** A fresh project and an ingest key of it. */
    async project(): Promise<{ projectId: number; key: string }> {
      const project = await api.POST('/api/projects', { headers: { authorization }, body: { name: `Project ${Math.random().toString(36).slice(2)}` } });
      expect(project.response.status, JSON.stringify(project.error)).toBe(201);
      const projectId = project.data!.data.id;
      const key = await api.POST('/api/projects/{project_id}/ingest-keys', { headers: { authorization }, params: { path: { project_id: projectId } }, body: { name: 'shipper' } });
      expect(key.response.status, JSON.stringify(key.error)).toBe(201);
      return { projectId, key: key.data!.data.key };
    },
    /** The project's logs in the server's own order (newest first), read in one query. */
    async logs(projectId: number): Promise<StoredLog[]> {
      return t.database.db
        .select({ id: logs.id, level: logs.level, message: logs.message, source: logs.source, context: logs.context, timestamp: logs.timestamp })
        .from(logs)
        .where(eq(logs.projectId, projectId))
        .orderBy(...newestFirst) as Promise<StoredLog[]>;
    },
  };
}
export type LogTracker = Awaited<ReturnType<typeof startLogTracker>>;

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: string;
}

/** The CLI as a child process; `input` is written to its standard input, then closed. */
export function cli(args: string[], options: { env?: Record<string, string>; input?: string | Buffer } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH, ...options.env }, encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error && typeof error.code !== 'number' && !error.signal) return reject(error);
      resolve({ code: child.exitCode, signal: child.signalCode, stdout, stderr: stderr.toString('utf8') });
    });
    child.stdin!.end(options.input ?? '');
  });
}

/** The CLI with its standard input left open, for tests that feed it over time or signal it. */
export function spawnCli(args: string[], env: Record<string, string>): ChildProcessWithoutNullStreams & { stderrText: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH, ...env } });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return Object.assign(child, { stderrText: () => stderr, exited });
}
