import { describe, expect, it } from 'vitest';
import { ciContext } from '../src/ci-context.js';
import { createClock, isoMicros, microsOf } from '../src/clock.js';
import { MAX_MESSAGE_LENGTH } from '../src/entry.js';
import { LineSplitter } from '../src/lines.js';
import { parseLine } from '../src/parse-line.js';

const NOW = Date.parse('2026-03-04T05:06:07.000Z');
const fixedClock = () => createClock(() => NOW);
const parse = (line: string) => parseLine(line, fixedClock(), { source: 'ci' });

describe('plain lines', () => {
  it.each([
    ['npm ERR! code ELIFECYCLE', 'error'],
    ['2026-01-02 12:00:00 ERROR connection refused', 'error'],
    ['FATAL: database "x" does not exist', 'error'],
    ['[error] Cannot find module', 'error'],
    ['[Error] Cannot find module', 'error'],
    ['E/ActivityManager: ANR in com.example', 'error'],
    ['TypeError: Cannot read properties of undefined', 'error'],
    ['::error file=app.js,line=1::Missing semicolon', 'error'],
    ['WARN deprecated request@2.88.2', 'warning'],
    ['WARNING: the lockfile is outdated', 'warning'],
    ['[warn] slow query', 'warning'],
    ['W/System: resource leak', 'warning'],
    ['time=12:00 level=warn msg="disk almost full"', 'warning'],
    ['DEBUG pool size 4', 'debug'],
    ['[trace] entering handler', 'debug'],
    ['INFO server started', 'info'],
    ['compiled 42 files', 'info'],
    ['found 0 errors and 2 warnings', 'info'],
    ['WARN retrying after ERROR', 'warning'],
  ])('%s → %s', (line, level) => {
    expect(parse(line)?.level).toBe(level);
  });

  it('strips colour codes before reading markers, and from the stored message', () => {
    const entry = parse('\u001b[31m\u001b[1mERROR\u001b[22m\u001b[39m build failed \u001b]8;;https://x.test\u0007link\u001b]8;;\u0007');
    expect(entry).toMatchObject({ level: 'error', message: 'ERROR build failed link', source: 'ci' });
  });

  it('skips empty and blank lines, drops a trailing carriage return', () => {
    expect(parse('')).toBeUndefined();
    expect(parse('   \t')).toBeUndefined();
    expect(parse('\u001b[0m')).toBeUndefined();
    expect(parse('done\r')?.message).toBe('done');
  });

  it('cuts over-long lines to the server limit, and replaces what the server cannot store', () => {
    const long = parse('x'.repeat(MAX_MESSAGE_LENGTH + 10))!;
    expect(long.message).toHaveLength(MAX_MESSAGE_LENGTH);
    expect(long.message.endsWith('…')).toBe(true);
    expect(parse('a\u0000b\ud800c')?.message).toBe('a\ufffdb\ufffdc');
  });

  it('stamps lines read in the same millisecond with strictly increasing microseconds', () => {
    const clock = fixedClock();
    const stamps = ['a', 'b', 'c'].map((line) => parseLine(line, clock)!.timestamp);
    expect(stamps).toEqual(['2026-03-04T05:06:07.000000Z', '2026-03-04T05:06:07.000001Z', '2026-03-04T05:06:07.000002Z']);
  });
});

describe('JSON lines', () => {
  it('keeps their fields: pino level and time, msg, the rest in context', () => {
    const entry = parse(JSON.stringify({ level: 50, time: 1_767_225_600_123, pid: 7, hostname: 'h', msg: 'payment failed', order: { id: 42 } }));
    expect(entry).toEqual({
      level: 'error',
      message: 'payment failed',
      timestamp: '2026-01-01T00:00:00.123000Z',
      source: 'ci',
      context: { pid: 7, hostname: 'h', order: { id: 42 } },
    });
  });

  it.each([
    [10, 'debug'], [20, 'debug'], [30, 'info'], [40, 'warning'], [50, 'error'], [60, 'error'],
    ['warn', 'warning'], ['WARNING', 'warning'], ['fatal', 'error'], ['critical', 'error'], ['trace', 'debug'], ['notice', 'info'], ['30', 'info'],
  ])('level %s → %s', (level, expected) => {
    expect(parse(JSON.stringify({ level, message: 'm' }))?.level).toBe(expected);
  });

  it('reads message or msg, an ISO timestamp to the microsecond, and marks when no level is given', () => {
    expect(parse('{"message":"ERROR in step","timestamp":"2026-01-02T03:04:05.123456+01:00"}')).toMatchObject({
      level: 'error',
      message: 'ERROR in step',
      timestamp: '2026-01-02T02:04:05.123456Z',
    });
    expect(parse('{"msg":"plain"}')).toMatchObject({ level: 'info', message: 'plain', timestamp: isoMicros(NOW * 1000) });
  });

  it('keeps a time the server cannot store in the context, and stamps the time of reading', () => {
    expect(parse('{"msg":"old","time":"yesterday"}')).toMatchObject({ timestamp: isoMicros(NOW * 1000), context: { time: 'yesterday' } });
  });

  it('keeps the line itself as the message when it has none, and treats other JSON as plain text', () => {
    expect(parse('{"event":"deploy"}')).toMatchObject({ message: '{"event":"deploy"}', context: { event: 'deploy' } });
    expect(parse('[1, 2]')).toMatchObject({ message: '[1, 2]', level: 'info' });
    expect(parse('{not json ERROR')).toMatchObject({ message: '{not json ERROR', level: 'error' });
  });

  it('moves equal timestamps on by a microsecond, keeping their order, and leaves distant ones alone', () => {
    const clock = fixedClock();
    const stamps = [1000, 1000, 1000, 5].map((time) => parseLine(JSON.stringify({ msg: 'x', time: 1_767_225_600_000 + time }), clock)!.timestamp);
    expect(stamps).toEqual(['2026-01-01T00:00:01.000000Z', '2026-01-01T00:00:01.000001Z', '2026-01-01T00:00:01.000002Z', '2026-01-01T00:00:00.005000Z']);
  });

  it('makes context storable: NUL in keys and values, nesting past what the server takes', () => {
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 40; i++) deep = { d: deep };
    const entry = parse(JSON.stringify({ msg: 'x', 'k\u0000': 'v\u0000', deep }))!;
    expect(entry.context!['k\ufffd']).toBe('v\ufffd');
    expect(JSON.stringify(entry.context).length).toBeGreaterThan(40 * 5);
    let depth = 0;
    for (let node: unknown = entry.context!.deep; node !== null && typeof node === 'object'; node = (node as { d?: unknown }).d) depth++;
    expect(depth).toBeLessThan(32);
  });
});

describe('times', () => {
  it('reads epoch milliseconds, epoch seconds and ISO instants; refuses what the server would', () => {
    expect(microsOf(1_767_225_600_123)).toBe(1_767_225_600_123_000);
    expect(microsOf(1_767_225_600)).toBe(1_767_225_600_000_000);
    expect(microsOf('2026-01-01T00:00:00.5Z')).toBe(1_767_225_600_500_000);
    expect(microsOf('2026-01-01')).toBeUndefined();
    expect(microsOf('2150-01-01T00:00:00Z')).toBeUndefined();
    expect(microsOf(-5)).toBeUndefined();
  });
});

describe('the pipeline context', () => {
  it('reads GitHub Actions', () => {
    expect(
      ciContext({
        GITHUB_ACTIONS: 'true', GITHUB_REPOSITORY: 'acme/shop', GITHUB_REF_NAME: 'main', GITHUB_SHA: 'abc123', GITHUB_JOB: 'test',
        GITHUB_SERVER_URL: 'https://github.com', GITHUB_RUN_ID: '99',
      }),
    ).toEqual({ provider: 'github', repository: 'acme/shop', ref: 'main', sha: 'abc123', job: 'test', run_url: 'https://github.com/acme/shop/actions/runs/99' });
  });

  it('reads GitLab CI and Jenkins, and nothing elsewhere', () => {
    expect(
      ciContext({ GITLAB_CI: 'true', CI_PROJECT_PATH: 'acme/shop', CI_COMMIT_REF_NAME: 'dev', CI_COMMIT_SHA: 'def', CI_JOB_NAME: 'lint', CI_JOB_URL: 'https://gitlab.test/j/1' }),
    ).toEqual({ provider: 'gitlab', repository: 'acme/shop', ref: 'dev', sha: 'def', job: 'lint', run_url: 'https://gitlab.test/j/1' });
    expect(ciContext({ JENKINS_URL: 'https://ci.test/', JOB_NAME: 'shop/main', BUILD_URL: 'https://ci.test/job/shop/7/', GIT_BRANCH: 'origin/main', GIT_COMMIT: 'fff' })).toEqual({
      provider: 'jenkins', job: 'shop/main', run_url: 'https://ci.test/job/shop/7/', ref: 'origin/main', sha: 'fff',
    });
    expect(ciContext({ HOME: '/root', CI: 'true' })).toBeUndefined();
  });

  it('goes into every log under ci, beside the line fields', () => {
    const ci = ciContext({ GITHUB_REPOSITORY: 'acme/shop', GITHUB_SHA: 'abc' })!;
    const clock = fixedClock();
    expect(parseLine('plain', clock, { context: { ci } })?.context).toEqual({ ci: { provider: 'github', repository: 'acme/shop', sha: 'abc' } });
    expect(parseLine('{"msg":"j","user":1}', clock, { context: { ci } })?.context).toEqual({ user: 1, ci: { provider: 'github', repository: 'acme/shop', sha: 'abc' } });
  });
});

describe('the line splitter', () => {
  it('splits on LF across chunks, keeps multi-byte characters whole, and gives the last unterminated line at the end', () => {
    const splitter = new LineSplitter();
    const euro = Buffer.from('€');
    expect(splitter.push(Buffer.concat([Buffer.from('one\ntw'), euro.subarray(0, 1)]))).toEqual(['one']);
    expect(splitter.push(Buffer.concat([euro.subarray(1), Buffer.from('o\r\n\nthree')])))
      .toEqual(['tw€o\r', '']);
    expect(splitter.end()).toEqual(['three']);
  });

  it('keeps the beginning of a line longer than its bound, and drops the rest up to the newline', () => {
    const splitter = new LineSplitter(10);
    expect(splitter.push(Buffer.from('0123456789abcdef'))).toEqual(['0123456789']);
    expect(splitter.push(Buffer.from('ghij\nnext\n'))).toEqual(['next']);
    expect(splitter.push(Buffer.from('0123456789ABC\nz'))).toEqual(['0123456789']);
    expect(splitter.end()).toEqual(['z']);
  });
});
