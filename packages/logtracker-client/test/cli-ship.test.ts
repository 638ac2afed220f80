import { setTimeout as wait } from 'node:timers/promises';
import { secondPass } from '@repo/db/testing-files';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, spawnCli, startLogTracker, type LogTracker } from './log-tracker.js';
import { startProxy } from './tcp-proxy.js';

let server: LogTracker;
beforeAll(async () => {
  server = await startLogTracker();
});
afterAll(() => server?.close());

const numbered = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `line ${String(from + i).padStart(6, '0')}`);

/** Stored messages oldest first: the reverse of the server's newest-first order. */
async function messagesInOrder(projectId: number) {
  return (await server.logs(projectId)).map((log) => log.message).reverse();
}

// A hundred thousand lines once, on PGlite; on PostgreSQL a fifth of them, enough for the server's
// own order (many batches, ids from a sequence) to be the one read.
const PIPED = secondPass ? 20_000 : 100_000;

describe('logtracker ship', () => {
  it(`delivers ${PIPED.toLocaleString('en')} piped lines exactly once, in the order they were read`, { timeout: 60_000 }, async () => {
    const { projectId, key } = await server.project();
    const lines = numbered(PIPED);
    const result = await cli(['ship', '--project', String(projectId)], { env: { LOGTRACKER_URL: server.url, LOGTRACKER_KEY: key }, input: `${lines.join('\n')}\n` });
    expect(result.stderr).toMatch(new RegExp(`^logtracker: ${PIPED} lines in ${PIPED / 1000} batches, [\\d.]+ (KiB|MiB) sent, 0 retries, [\\d.]+ s \\(\\d+ lines/s\\)\\n$`));
    expect(result.code).toBe(0);
    expect(await messagesInOrder(projectId)).toEqual(lines);
  });

  it('delivers every line exactly once through connections cut mid-request and a server unreachable for 5 s', { timeout: 60_000 }, async () => {
    const { projectId, key } = await server.project();
    const proxy = await startProxy(new URL(server.url));
    try {
      const child = spawnCli(['ship', '-p', String(projectId), '--max-backoff', '1s', '--flush-ms', '100'], { LOGTRACKER_URL: proxy.url, LOGTRACKER_KEY: key });
      const lines = numbered(10_000);
      // Written over a second, so that batches are in flight when the connections are cut.
      for (let i = 0; i < 10; i++) {
        child.stdin.write(`${lines.slice(i * 1000, (i + 1) * 1000).join('\n')}\n`);
        if (i === 3) await proxy.cut();
        await wait(100);
      }
      child.stdin.end();
      await wait(5000 - 6 * 100);
      await proxy.restore();
      expect(await child.exited, child.stderrText()).toBe(0);
      expect(child.stderrText()).toMatch(/not delivered \(fetch failed.*\); retry 1 in/);
      expect(child.stderrText()).toMatch(/^logtracker: 10000 lines in \d+ batches, .* [1-9]\d* retries/m);
      expect(await messagesInOrder(projectId)).toEqual(lines);
    } finally {
      await proxy.close();
    }
  });

  it('maps JSON and plain lines, strips colour codes, and adds the pipeline context', async () => {
    const { projectId, key } = await server.project();
    const input = [
      JSON.stringify({ level: 40, time: 1_767_225_600_123, msg: 'disk almost full', pid: 1, disk: '/dev/sda1' }),
      JSON.stringify({ level: 'fatal', message: 'out of memory', timestamp: '2026-01-01T00:00:01.000002Z' }),
      '\u001b[31mERROR\u001b[39m: tests failed',
      '',
      '[debug] cache hit',
      'E/Payments: card declined',
      'all good',
    ].join('\n');
    const env = {
      LOGTRACKER_URL: server.url, LOGTRACKER_KEY: key, GITHUB_ACTIONS: 'true', GITHUB_REPOSITORY: 'acme/shop', GITHUB_REF_NAME: 'main',
      GITHUB_SHA: 'abc123', GITHUB_JOB: 'test', GITHUB_SERVER_URL: 'https://github.com', GITHUB_RUN_ID: '42',
    };
    const result = await cli(['ship', '-p', String(projectId), '--source', 'unit-tests', '--quiet'], { env, input });
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const ci = { provider: 'github', repository: 'acme/shop', ref: 'main', sha: 'abc123', job: 'test', run_url: 'https://github.com/acme/shop/actions/runs/42' };
    const stored = (await server.logs(projectId)).reverse();
    expect(stored.map(({ level, message, source, context }) => ({ level, message, source, context }))).toEqual([
      { level: 'warning', message: 'disk almost full', source: 'unit-tests', context: { pid: 1, disk: '/dev/sda1', ci } },
      { level: 'error', message: 'out of memory', source: 'unit-tests', context: { ci } },
      { level: 'error', message: 'ERROR: tests failed', source: 'unit-tests', context: { ci } },
      { level: 'debug', message: '[debug] cache hit', source: 'unit-tests', context: { ci } },
      { level: 'error', message: 'E/Payments: card declined', source: 'unit-tests', context: { ci } },
      { level: 'info', message: 'all good', source: 'unit-tests', context: { ci } },
    ]);
    expect(stored.slice(0, 2).map((log) => log.timestamp.toISOString())).toEqual(['2026-01-01T00:00:00.123Z', '2026-01-01T00:00:01.000Z']);
  });

  // The CLI's own handling (files, signals, refusals, usage) answers once, in the pass on PGlite; on
  // PostgreSQL what depends on the server's database runs: order, exactly once, the stored fields.
  it.skipIf(secondPass)('ships files, each line of each file, the source being the file name', async () => {
    const { projectId, key } = await server.project();
    const { mkdtemp, writeFile } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const dir = await mkdtemp(`${tmpdir()}/logtracker-`);
    await writeFile(`${dir}/build.log`, 'compiling\nWARN slow step\ndone');
    const result = await cli(['ship', '-p', String(projectId), '--quiet', `${dir}/build.log`], { env: { LOGTRACKER_URL: server.url, LOGTRACKER_KEY: key } });
    expect(result.code).toBe(0);
    expect((await server.logs(projectId)).reverse().map((l) => [l.level, l.message, l.source])).toEqual([
      ['info', 'compiling', 'build.log'],
      ['warning', 'WARN slow step', 'build.log'],
      ['info', 'done', 'build.log'],
    ]);
  });

  it.skipIf(secondPass)('delivers the tail on SIGTERM, lines still in the pipe included, and exits 128+15', async () => {
    const { projectId, key } = await server.project();
    const child = spawnCli(['ship', '-p', String(projectId), '--flush-ms', '600000'], { LOGTRACKER_URL: server.url, LOGTRACKER_KEY: key });
    // A full batch leaves at once: once it is stored, the CLI is reading, its signal handlers in place.
    const first = numbered(1000);
    child.stdin.write(`${first.join('\n')}\n`);
    await expect.poll(async () => (await server.logs(projectId)).length, { timeout: 15_000 }).toBe(1000);
    // Signalled at once: the tail may still be in the pipe, unread; the writer stays open.
    child.stdin.write('first\nsecond\nthird\n');
    child.kill('SIGTERM');
    expect(await child.exited).toBe(143);
    expect(child.stderrText()).toMatch(/^logtracker: 1003 lines in 2 batches/m);
    expect(await messagesInOrder(projectId)).toEqual([...first, 'first', 'second', 'third']);
  });
});

describe.skipIf(secondPass)('undeliverable batches', () => {
  it('a refused key: exit 1, the refusal and the lost lines on stderr; --best-effort exits 0', async () => {
    const { projectId } = await server.project();
    const args = ['ship', '-p', String(projectId)];
    const env = { LOGTRACKER_URL: server.url, LOGTRACKER_KEY: 'lt_not_a_key' };
    const input = 'one\ntwo\nthree\n';
    const strict = await cli(args, { env, input });
    expect(strict.code).toBe(1);
    expect(strict.stderr).toMatch(/batch 1 \(3 lines\) refused by the server: 401/);
    expect(strict.stderr).toContain('logtracker: 3 of 3 lines lost');
    const lenient = await cli([...args, '--best-effort'], { env, input });
    expect(lenient.code).toBe(0);
    expect(lenient.stderr).toContain('logtracker: 3 of 3 lines lost');
  });

  it('a server gone past the flush timeout: exit 1 after about the timeout, with the lost lines', async () => {
    const proxy = await startProxy(new URL(server.url));
    await proxy.cut();
    const started = Date.now();
    const result = await cli(['ship', '-p', '1', '--flush-timeout', '1s', '--max-backoff', '200ms'], { env: { LOGTRACKER_URL: proxy.url, LOGTRACKER_KEY: 'k' }, input: 'a\nb\n' });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('logtracker: 2 of 2 lines lost: not delivered (refused, or still unsent after the 1 s flush timeout)');
  });

  it('gives plain lines without a marker the --level asked for; a marker or a JSON level still wins', async () => {
    const { projectId, key } = await server.project();
    const input = 'compiling 12 files\nERROR: test failed\n{"level":"debug","msg":"cache hit"}\n';
    const result = await cli(['ship', '-p', String(projectId), '--level', 'warn', '-q'], { env: { LOGTRACKER_URL: server.url, LOGTRACKER_KEY: key }, input });
    expect(result.code, result.stderr).toBe(0);
    const stored = (await server.logs(projectId)).reverse().map((log) => [log.level, log.message]);
    expect(stored).toEqual([
      ['warning', 'compiling 12 files'],
      ['error', 'ERROR: test failed'],
      ['debug', 'cache hit'],
    ]);
    const refused = await cli(['ship', '-p', String(projectId), '--level', 'loud'], { env: { LOGTRACKER_URL: server.url, LOGTRACKER_KEY: key } });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--level must be error, warning, info or debug, not "loud"');
  });

  it('a usage error exits 2 and says what is missing', async () => {
    const result = await cli(['ship', '-p', '3'], { env: {} });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('no ingest key: set LOGTRACKER_KEY or pass --key');
  });
});
