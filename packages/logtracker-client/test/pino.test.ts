import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLogTracker, type LogTracker } from './log-tracker.js';

let server: LogTracker;
beforeAll(async () => {
  server = await startLogTracker();
});
afterAll(() => server?.close());

describe('the pino transport', () => {
  it("delivers from pino's worker thread with levels, message, time and fields mapped, and flushes on close", async () => {
    const { projectId, key } = await server.project();
    const app = fileURLToPath(new URL('fixtures/pino-app.mjs', import.meta.url));
    const output = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, [app, server.url, key, String(projectId), '1500'], { timeout: 30_000 }, (error, stdout, stderr) =>
        error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout + stderr),
      ),
    );
    // The transport reports lost logs on stderr: there were none.
    expect(output).toBe('');

    const stored = (await server.logs(projectId)).reverse();
    expect(stored).toHaveLength(1506);
    expect(stored.slice(0, 6).map((log) => [log.level, log.message])).toEqual([
      ['debug', 't'],
      ['debug', 'd'],
      ['info', 'order placed'],
      ['warning', 'w'],
      ['error', 'payment failed'],
      ['error', 'f'],
    ]);
    expect(stored[2]).toMatchObject({ source: 'checkout', context: { name: 'checkout', order: { id: 42 } } });
    expect(stored[4]!.context).toMatchObject({ err: { type: 'Error', message: 'card declined' } });
    expect(stored.every((log) => log.context && !('pid' in log.context) && !('hostname' in log.context))).toBe(true);
    // Logs of one millisecond keep the order they were written in.
    expect(stored.slice(6).map((log) => log.message)).toEqual(Array.from({ length: 1500 }, (_, i) => `bulk ${i}`));
    expect(stored[6]!.context).toMatchObject({ request_id: 'r-1' });
    const time = stored[0]!.timestamp.getTime();
    expect(Math.abs(time - Date.now())).toBeLessThan(60_000);
  });
});
