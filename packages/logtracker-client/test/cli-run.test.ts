import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, startLogTracker, type LogTracker } from './log-tracker.js';

const GENERATE = fileURLToPath(new URL('../scripts/generate.mjs', import.meta.url));
const GENERATED = fileURLToPath(new URL('../src/generated/openapi.ts', import.meta.url));

let server: LogTracker;
beforeAll(async () => {
  server = await startLogTracker();
});
afterAll(() => server?.close());

/** A command that writes raw bytes to stdout and stderr (invalid UTF-8, colour codes, CR, no final newline). */
const NOISY = `
process.stdout.write(Buffer.from([0x6f, 0x6b, 0x0a, 0xff, 0xfe, 0x0a]));
process.stdout.write('\\u001b[32mPASS\\u001b[39m unit\\r\\n');
process.stderr.write('WARN slow test\\nERROR assertion failed\\n');
process.stdout.write('partial line');
process.exitCode = 3;
`;

describe('logtracker run', () => {
  it("passes the command's stdout and stderr through byte for byte, exits with its status, and ships every line", async () => {
    const { projectId, key } = await server.project();
    const result = await cli(['run', '-p', String(projectId), '--quiet', '--', process.execPath, '-e', NOISY], { env: { LOGTRACKER_URL: server.url, LOGTRACKER_KEY: key } });
    expect(result.code).toBe(3);
    expect(result.stdout.equals(Buffer.concat([Buffer.from([0x6f, 0x6b, 0x0a, 0xff, 0xfe, 0x0a]), Buffer.from('\u001b[32mPASS\u001b[39m unit\r\npartial line')]))).toBe(true);
    expect(result.stderr).toBe('WARN slow test\nERROR assertion failed\n');
    const stored = await server.logs(projectId);
    const byMessage = Object.fromEntries(stored.map((log) => [log.message, log.level]));
    expect(byMessage).toEqual({
      ok: 'info',
      '\ufffd\ufffd': 'info',
      'PASS unit': 'info',
      'partial line': 'info',
      'WARN slow test': 'warning',
      'ERROR assertion failed': 'error',
    });
    // The command's name is the source unless --source says otherwise.
    expect(new Set(stored.map((log) => log.source))).toEqual(new Set(['node']));
  });

  it('exits 128+n when a signal ends the command, and 0 when it succeeds', async () => {
    const { projectId, key } = await server.project();
    const env = { LOGTRACKER_URL: server.url, LOGTRACKER_KEY: key };
    const killed = await cli(['run', '-p', String(projectId), '-q', '--', process.execPath, '-e', "console.log('bye'); process.kill(process.pid, 'SIGKILL')"], { env });
    expect(killed.code).toBe(137);
    const fine = await cli(['run', '-p', String(projectId), '-q', '--', process.execPath, '-e', "console.log('hi')"], { env });
    expect(fine.code).toBe(0);
    expect(fine.stdout.toString()).toBe('hi\n');
    expect((await server.logs(projectId)).map((log) => log.message).sort()).toEqual(['bye', 'hi']);
  });

  it("keeps the command's failure status when lines are lost, and turns success into 1 unless --best-effort", async () => {
    const env = { LOGTRACKER_URL: server.url, LOGTRACKER_KEY: 'lt_wrong' };
    const failed = await cli(['run', '-p', '1', '-q', '--', process.execPath, '-e', "console.log('x'); process.exitCode = 4"], { env });
    expect(failed.code).toBe(4);
    expect(failed.stderr).toContain('logtracker: 1 of 1 lines lost');
    const succeeded = await cli(['run', '-p', '1', '-q', '--', process.execPath, '-e', "console.log('x')"], { env });
    expect(succeeded.code).toBe(1);
    const lenient = await cli(['run', '-p', '1', '-q', '--best-effort', '--', process.execPath, '-e', "console.log('x')"], { env });
    expect(lenient.code).toBe(0);
  });

  it('answers 127 for a command that cannot be run, and prints its help', async () => {
    const env = { LOGTRACKER_URL: server.url, LOGTRACKER_KEY: 'k' };
    const missing = await cli(['run', '-p', '1', '-q', '--', 'no-such-command-here'], { env });
    expect(missing.code).toBe(127);
    expect(missing.stderr).toContain('cannot run no-such-command-here');
    const help = await cli(['run', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout.toString()).toMatch(/Usage:\n {2}logtracker run \[flags\] -- <command>[\s\S]*Environment:[\s\S]*LOGTRACKER_KEY[\s\S]*Examples:/);
  });
});

describe('the generated client types', () => {
  it('are what the built log tracker\'s OpenAPI document gives today (after an API change: pnpm --filter @repo/logtracker-client generate)', async () => {
    const regenerated = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, [GENERATE, '--stdout', '--from', `${server.url}/docs/json`], { maxBuffer: 32 * 1024 * 1024, timeout: 60_000 }, (error, stdout, stderr) =>
        error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout),
      ),
    );
    expect(regenerated).toContain('"/api/projects/{project_id}/logs/batch"');
    expect(regenerated === (await readFile(GENERATED, 'utf8')), 'src/generated/openapi.ts differs from the document of the built app').toBe(true);
  });
});
