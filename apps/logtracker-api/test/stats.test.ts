import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogLevel } from '../src/db/schema/index.js';
import { bucketCount, customPeriod } from '../src/modules/stats/stats.periods.js';
import { cover, grainMs } from '../src/modules/stats/stats.repository.js';
import {
  addMember,
  buildTestApp,
  createLogs,
  createProject,
  createUser,
  expectError,
  type TestApp,
  type TestUser,
} from './helpers.js';

type LevelCounts = Record<LogLevel, number>;

interface StatsBody {
  time_range: string;
  from: string;
  to: string;
  bucket_seconds: number;
  total: number;
  by_level: LevelCounts;
  error_rate: number;
  series: ({ start: string; total: number } & LevelCounts)[];
  top_sources: { source: string | null; count: number }[];
  previous_period: { from: string; to: string; total: number; by_level: LevelCounts; error_rate: number };
  change: { total_pct: number | null; errors_pct: number | null; error_rate_delta: number };
}

const M = 60_000;
const H = 60 * M;
const D = 24 * H;

// Statistics read per-minute rollups for the last hour and per-hour ones for the longer ranges;
// a period ends with the rollup bucket that holds now, so it spans whole buckets.
const RANGES = [
  { range: '1h', ms: H, bucketSeconds: 300, buckets: 12, granularity: M },
  { range: '24h', ms: D, bucketSeconds: 3_600, buckets: 24, granularity: H },
  { range: '7d', ms: 7 * D, bucketSeconds: 21_600, buckets: 28, granularity: H },
  { range: '30d', ms: 30 * D, bucketSeconds: 86_400, buckets: 30, granularity: H },
] as const;

const LEVELS: LogLevel[] = ['error', 'warning', 'info', 'debug'];
const zero = (): LevelCounts => ({ error: 0, warning: 0, info: 0, debug: 0 });
const counts = (c: Partial<LevelCounts>): LevelCounts => ({ ...zero(), ...c });

let t: TestApp;
let owner: TestUser;
let member: TestUser;
let stranger: TestUser;

beforeAll(async () => {
  t = await buildTestApp();
  owner = await createUser(t);
  member = await createUser(t);
  stranger = await createUser(t);
});
afterAll(() => t.close());

function stats(projectId: number | string, query: Record<string, string> = {}, who: TestUser | null = owner) {
  return t.app.inject({
    method: 'GET',
    url: `/api/projects/${projectId}/stats`,
    headers: who ? who.headers : {},
    query,
  });
}

async function statsOk(projectId: number, query: Record<string, string> = {}, who: TestUser = owner) {
  const response = await stats(projectId, query, who);
  expect(response.statusCode, response.body).toBe(200);
  return (response.json() as { data: StatsBody }).data;
}

/** The non-empty buckets of a series, by index. */
function nonEmpty(series: StatsBody['series']) {
  const out: Record<number, { total: number } & Partial<LevelCounts>> = {};
  series.forEach((b, i) => {
    if (b.total === 0) return;
    const levels = Object.fromEntries(LEVELS.filter((l) => b[l] > 0).map((l) => [l, b[l]]));
    out[i] = { total: b.total, ...levels };
  });
  return out;
}

/** The shape every answer has, whatever the data: a complete series fitted to the range. */
function expectWellFormed(data: StatsBody, spec: (typeof RANGES)[number], before: number, after: number) {
  expect(data.time_range).toBe(spec.range);
  expect(data.bucket_seconds).toBe(spec.bucketSeconds);
  const from = Date.parse(data.from);
  const to = Date.parse(data.to);
  expect(to).toBeGreaterThanOrEqual(before);
  expect(to).toBeLessThanOrEqual(after + spec.granularity);
  expect(to % spec.granularity).toBe(0);
  expect(to - from).toBe(spec.ms);
  expect(data.series).toHaveLength(spec.buckets);
  data.series.forEach((bucket, i) => {
    expect(Date.parse(bucket.start)).toBe(from + i * spec.bucketSeconds * 1000);
    expect(bucket.total).toBe(bucket.error + bucket.warning + bucket.info + bucket.debug);
  });
  expect(data.series.reduce((acc, b) => acc + b.total, 0)).toBe(data.total);
  expect(data.total).toBe(data.by_level.error + data.by_level.warning + data.by_level.info + data.by_level.debug);
  expect(data.previous_period.to).toBe(data.from);
  expect(Date.parse(data.previous_period.from)).toBe(from - spec.ms);
  expect(data.previous_period.total).toBe(
    data.previous_period.by_level.error +
      data.previous_period.by_level.warning +
      data.previous_period.by_level.info +
      data.previous_period.by_level.debug,
  );
}

describe('GET /api/projects/{project_id}/stats', () => {
  describe('an empty project', () => {
    it('defaults to 24h and answers zeros, with every bucket present', async () => {
      const projectId = (await createProject(t, owner)).id;
      const before = Date.now();
      const data = await statsOk(projectId);
      const after = Date.now();
      expectWellFormed(data, RANGES[1], before, after);
      expect(data.total).toBe(0);
      expect(data.by_level).toEqual(zero());
      expect(data.error_rate).toBe(0);
      expect(data.top_sources).toEqual([]);
      expect(data.series.every((b) => b.total === 0 && b.error === 0 && b.warning === 0 && b.info === 0 && b.debug === 0)).toBe(
        true,
      );
      expect(data.previous_period).toMatchObject({ total: 0, by_level: zero(), error_rate: 0 });
      expect(data.change).toEqual({ total_pct: null, errors_pct: null, error_rate_delta: 0 });
    });

    for (const spec of RANGES) {
      it(`answers ${spec.range} with ${spec.buckets} buckets of ${spec.bucketSeconds} seconds`, async () => {
        const projectId = (await createProject(t, owner)).id;
        const before = Date.now();
        const data = await statsOk(projectId, { time_range: spec.range });
        expectWellFormed(data, spec, before, Date.now());
        expect(data.total).toBe(0);
      });
    }
  });

  describe('counts over known timestamps', () => {
    let projectId: number;
    let known: { level: LogLevel; source: string | null; timestamp: Date }[] = [];

    /**
     * The non-empty series buckets the known logs make for an hour-granularity range. Such a range
     * starts on a whole hour, so where a log falls depends on the minute the test runs at: the
     * expectation is computed from the answer's `from`, the rollup's hour and the bucket width.
     */
    function expectedSeries(data: StatsBody, spec: (typeof RANGES)[number]) {
      const from = Date.parse(data.from);
      const to = Date.parse(data.to);
      const out: Record<number, { total: number } & Partial<LevelCounts>> = {};
      for (const log of known) {
        const bucket = Math.floor(log.timestamp.getTime() / spec.granularity) * spec.granularity;
        if (bucket < from || bucket >= to) continue;
        const i = Math.min(spec.buckets - 1, Math.floor((bucket - from) / (spec.bucketSeconds * 1000)));
        const entry = (out[i] ??= { total: 0 });
        entry.total += 1;
        entry[log.level] = (entry[log.level] ?? 0) + 1;
      }
      return out;
    }

    beforeAll(async () => {
      projectId = (await createProject(t, owner)).id;
      const other = await createProject(t, owner);
      const now = Date.now();
      const at = (offset: number) => new Date(now + offset);
      // Offsets sit in the middle of buckets, so the few milliseconds between this insert and the
      // request never move a log across a bucket or range boundary.
      known = [
        // The last 24 hours.
        { level: 'error', source: 'api', timestamp: at(-32.5 * M) }, // #1
        { level: 'error', source: 'api', timestamp: at(-90 * M) }, // #2
        { level: 'warning', source: 'api', timestamp: at(-5.5 * H) }, // #3
        { level: 'info', source: 'worker', timestamp: at(-(5 * H + 40 * M)) }, // #4
        { level: 'info', source: null, timestamp: at(-10.5 * H) }, // #5
        { level: 'debug', source: 'worker', timestamp: at(-22.5 * H) }, // #6
        // The 24 hours before (a 24-hour period ends up to an hour after now).
        { level: 'error', source: 'api', timestamp: at(-30.5 * H) }, // #7
        { level: 'error', source: 'worker', timestamp: at(-40.5 * H) }, // #8
        { level: 'info', source: 'api', timestamp: at(-46.5 * H) }, // #9
        { level: 'info', source: 'api', timestamp: at(-26.5 * H) }, // #10
        // Further back, and in the future.
        { level: 'error', source: 'api', timestamp: at(-72.5 * H) }, // #11
        { level: 'error', source: 'api', timestamp: at(2 * H) }, // #12: not yet happened
        { level: 'warning', source: 'api', timestamp: at(-8.5 * D) }, // #13
        { level: 'debug', source: 'api', timestamp: at(-40.5 * D) }, // #14
      ];
      await createLogs(t, projectId, known);
      // Another project's logs are never counted.
      await createLogs(t, other.id, [
        { level: 'error', source: 'api', timestamp: at(-10 * M) },
        { level: 'error', source: 'api', timestamp: at(-30 * H) },
      ]);
    });

    it('24h: exact totals, series, error rate, top sources and change', async () => {
      const before = Date.now();
      const data = await statsOk(projectId, { time_range: '24h' });
      expectWellFormed(data, RANGES[1], before, Date.now());
      expect(data.total).toBe(6);
      expect(data.by_level).toEqual(counts({ error: 2, warning: 1, info: 2, debug: 1 }));
      expect(data.error_rate).toBeCloseTo(2 / 6, 4);
      expect(nonEmpty(data.series)).toEqual(expectedSeries(data, RANGES[1]));
      expect(Object.keys(nonEmpty(data.series)).length).toBeGreaterThanOrEqual(4);
      expect(data.top_sources).toEqual([
        { source: 'api', count: 3 },
        { source: 'worker', count: 2 },
        { source: null, count: 1 },
      ]);
      expect(data.previous_period).toMatchObject({
        total: 4,
        by_level: counts({ error: 2, info: 2 }),
        error_rate: 0.5,
      });
      expect(data.change.total_pct).toBe(50);
      expect(data.change.errors_pct).toBe(0);
      expect(data.change.error_rate_delta).toBeCloseTo(2 / 6 - 0.5, 4);
    });

    it('the default range is 24h', async () => {
      const byDefault = await statsOk(projectId);
      expect(byDefault.time_range).toBe('24h');
      expect(byDefault.total).toBe(6);
      expect(byDefault.previous_period.total).toBe(4);
    });

    it('1h: only the last hour, and the hour before as previous period', async () => {
      const before = Date.now();
      const data = await statsOk(projectId, { time_range: '1h' });
      expectWellFormed(data, RANGES[0], before, Date.now());
      expect(data.total).toBe(1);
      expect(data.by_level).toEqual(counts({ error: 1 }));
      expect(data.error_rate).toBe(1);
      expect(nonEmpty(data.series)).toEqual({ 5: { total: 1, error: 1 } });
      expect(data.top_sources).toEqual([{ source: 'api', count: 1 }]);
      expect(data.previous_period).toMatchObject({ total: 1, by_level: counts({ error: 1 }), error_rate: 1 });
      expect(data.change).toEqual({ total_pct: 0, errors_pct: 0, error_rate_delta: 0 });
    });

    it('7d: errors_pct is null when the previous period had no errors', async () => {
      const before = Date.now();
      const data = await statsOk(projectId, { time_range: '7d' });
      expectWellFormed(data, RANGES[2], before, Date.now());
      expect(data.total).toBe(11);
      expect(data.by_level).toEqual(counts({ error: 5, warning: 1, info: 4, debug: 1 }));
      expect(data.error_rate).toBeCloseTo(5 / 11, 4);
      expect(nonEmpty(data.series)).toEqual(expectedSeries(data, RANGES[2]));
      expect(Object.keys(nonEmpty(data.series)).length).toBeGreaterThanOrEqual(7);
      expect(data.top_sources).toEqual([
        { source: 'api', count: 7 },
        { source: 'worker', count: 3 },
        { source: null, count: 1 },
      ]);
      expect(data.previous_period).toMatchObject({ total: 1, by_level: counts({ warning: 1 }), error_rate: 0 });
      expect(data.change.total_pct).toBe(1000);
      expect(data.change.errors_pct).toBeNull();
      expect(data.change.error_rate_delta).toBeCloseTo(5 / 11, 4);
    });

    it('30d: daily buckets', async () => {
      const before = Date.now();
      const data = await statsOk(projectId, { time_range: '30d' });
      expectWellFormed(data, RANGES[3], before, Date.now());
      expect(data.total).toBe(12);
      expect(data.by_level).toEqual(counts({ error: 5, warning: 2, info: 4, debug: 1 }));
      expect(nonEmpty(data.series)).toEqual(expectedSeries(data, RANGES[3]));
      expect(Object.keys(nonEmpty(data.series)).length).toBeGreaterThanOrEqual(4);
      expect(data.previous_period).toMatchObject({ total: 1, by_level: counts({ debug: 1 }), error_rate: 0 });
      expect(data.change.total_pct).toBe(1100);
      expect(data.change.errors_pct).toBeNull();
    });

    it('a member who is not the owner reads the same figures', async () => {
      await addMember(t, projectId, member);
      const data = await statsOk(projectId, {}, member);
      expect(data.total).toBe(6);
      expect(data.previous_period.total).toBe(4);
    });
  });

  describe('change against the previous period', () => {
    it('answers a negative change and a null one when the previous period was empty', async () => {
      const projectId = (await createProject(t, owner)).id;
      const now = Date.now();
      await createLogs(t, projectId, [
        { level: 'error', timestamp: new Date(now - 30 * M) },
        { level: 'error', timestamp: new Date(now - 61.5 * M) },
        { level: 'error', timestamp: new Date(now - 70 * M) },
        { level: 'info', timestamp: new Date(now - 80 * M) },
        { level: 'info', timestamp: new Date(now - 90 * M) },
      ]);
      const hour = await statsOk(projectId, { time_range: '1h' });
      expect(hour.total).toBe(1);
      expect(hour.previous_period.total).toBe(4);
      expect(hour.change.total_pct).toBe(-75);
      expect(hour.change.errors_pct).toBeCloseTo(-50, 2);
      expect(hour.change.error_rate_delta).toBe(0.5);

      // Everything is inside the last 24 hours; the 24 hours before are empty.
      const day = await statsOk(projectId, { time_range: '24h' });
      expect(day.total).toBe(5);
      expect(day.error_rate).toBe(0.6);
      expect(day.previous_period.total).toBe(0);
      expect(day.change.total_pct).toBeNull();
      expect(day.change.errors_pct).toBeNull();
    });
  });

  describe('top sources', () => {
    it('orders by count, then by name, and keeps the ten largest', async () => {
      const projectId = (await createProject(t, owner)).id;
      const now = Date.now();
      const entries: { source: string | null; timestamp: Date }[] = [];
      const add = (source: string | null, n: number) => {
        for (let i = 0; i < n; i++) entries.push({ source, timestamp: new Date(now - (entries.length + 1) * M) });
      };
      add('gamma', 5);
      add('beta', 3);
      add('alpha', 3);
      add(null, 4);
      for (let i = 0; i < 10; i++) add(`single-${String(i).padStart(2, '0')}`, 1);
      await createLogs(t, projectId, entries);

      const data = await statsOk(projectId, { time_range: '1h' });
      expect(data.total).toBe(25);
      expect(data.top_sources).toEqual([
        { source: 'gamma', count: 5 },
        { source: null, count: 4 },
        { source: 'alpha', count: 3 },
        { source: 'beta', count: 3 },
        { source: 'single-00', count: 1 },
        { source: 'single-01', count: 1 },
        { source: 'single-02', count: 1 },
        { source: 'single-03', count: 1 },
        { source: 'single-04', count: 1 },
        { source: 'single-05', count: 1 },
      ]);
    });
  });

  describe('a custom range (from_date, to_date)', () => {
    let projectId: number;
    let anchor: number;
    const iso = (ms: number) => new Date(ms).toISOString();

    beforeAll(async () => {
      projectId = (await createProject(t, owner)).id;
      // A whole hour a day and more back: within the three days minute rollups are kept.
      anchor = Math.floor((Date.now() - 30 * H) / H) * H;
      const at = (offset: number) => new Date(anchor + offset);
      await createLogs(t, projectId, [
        { level: 'error', source: 'api', timestamp: at(10 * M + 30_000) },
        { level: 'info', source: 'web', timestamp: at(25 * M) },
        { level: 'warning', source: 'api', timestamp: at(70 * M) },
        { level: 'error', source: 'api', timestamp: at(-30 * M) }, // the previous period
        { level: 'info', source: 'api', timestamp: at(3 * H) }, // after the range
      ]);
    });

    it('replaces time_range: two hours in 120 buckets of a minute, and the two hours before as previous period', async () => {
      const data = await statsOk(projectId, { time_range: '7d', from_date: iso(anchor), to_date: iso(anchor + 2 * H) });
      expect(data).toMatchObject({ time_range: 'custom', from: iso(anchor), to: iso(anchor + 2 * H), bucket_seconds: 60, total: 3 });
      expect(data.by_level).toEqual(counts({ error: 1, warning: 1, info: 1 }));
      expect(data.series).toHaveLength(120);
      expect(data.series[0]?.start).toBe(iso(anchor));
      expect(nonEmpty(data.series)).toEqual({ 10: { total: 1, error: 1 }, 25: { total: 1, info: 1 }, 70: { total: 1, warning: 1 } });
      expect(data.top_sources).toEqual([
        { source: 'api', count: 2 },
        { source: 'web', count: 1 },
      ]);
      expect(data.previous_period).toMatchObject({ from: iso(anchor - 2 * H), to: iso(anchor), total: 1, by_level: counts({ error: 1 }) });
      expect(data.change.total_pct).toBe(200);
    });

    it('aligns the series start down to its bucket and the end up to the minute, in the finest buckets that make 120 at most', async () => {
      // 2 h 1 min once aligned: 121 minutes, so 5-minute buckets from anchor + 5 min.
      const data = await statsOk(projectId, { from_date: iso(anchor + 7 * M + 30_000), to_date: iso(anchor + 2 * H + 7 * M + 30_000) });
      expect(data).toMatchObject({ time_range: 'custom', from: iso(anchor + 5 * M), to: iso(anchor + 2 * H + 8 * M), bucket_seconds: 300, total: 3 });
      expect(data.series).toHaveLength(25);
      expect(nonEmpty(data.series)).toEqual({ 1: { total: 1, error: 1 }, 4: { total: 1, info: 1 }, 13: { total: 1, warning: 1 } });
      expect(data.previous_period).toMatchObject({ from: iso(anchor - 2 * H + 2 * M), to: iso(anchor + 5 * M), total: 1 });
    });

    it('reads hours for buckets of an hour or more: ten days in 40 buckets of 6 hours', async () => {
      const from = Math.floor((anchor - 5 * D) / (6 * H)) * 6 * H;
      const data = await statsOk(projectId, { from_date: iso(from), to_date: iso(from + 10 * D) });
      expect(data).toMatchObject({ time_range: 'custom', bucket_seconds: 21_600, total: 5 });
      expect(data.series).toHaveLength(40);
      expect(data.series.reduce((acc, b) => acc + b.total, 0)).toBe(5);
      expect(data.previous_period.total).toBe(0);
      expect(data.change.total_pct).toBeNull();
    });

    const invalid: [string, Record<string, string>, string][] = [
      ['from_date alone', { from_date: '2026-05-01T00:00:00Z' }, 'to_date'],
      ['to_date alone', { to_date: '2026-05-01T00:00:00Z' }, 'from_date'],
      ['an empty range', { from_date: '2026-05-01T00:00:00Z', to_date: '2026-05-01T00:00:00Z' }, 'to_date'],
      ['a range backwards', { from_date: '2026-05-02T00:00:00Z', to_date: '2026-05-01T00:00:00Z' }, 'to_date'],
      ['a range over 400 days', { from_date: '2025-01-01T00:00:00Z', to_date: '2026-02-05T00:00:01Z' }, 'to_date'],
      ['a date without a time zone', { from_date: '2026-05-01T00:00:00', to_date: '2026-05-02T00:00:00Z' }, 'from_date'],
      ['a date that is not one', { from_date: 'yesterday', to_date: '2026-05-02T00:00:00Z' }, 'from_date'],
    ];
    for (const [what, query, field] of invalid) {
      it(`answers 422 naming ${field} for ${what}`, async () => {
        const body = expectError(await stats(projectId, query), 422, 'validation_error');
        expect(Object.keys(body.errors ?? {})).toEqual([field]);
      });
    }

    it('takes exactly 400 days, and answers 404 to a stranger', async () => {
      const data = await statsOk(projectId, { from_date: '2025-01-01T00:00:00Z', to_date: '2026-02-05T00:00:00Z' });
      expect(data.bucket_seconds).toBe(86_400);
      expect(data.series).toHaveLength(400);
      expectError(await stats(projectId, { from_date: iso(anchor), to_date: iso(anchor + H) }, stranger), 404, 'not_found');
    });

    it('picks the finest bucket that gives at most 120 buckets', () => {
      const from = new Date('2026-05-01T10:00:00Z');
      const pick = (ms: number, start = from) => {
        const period = customPeriod(start, new Date(start.getTime() + ms));
        return { bucket: period.bucketMs, buckets: bucketCount(period) };
      };
      expect(pick(2 * H)).toEqual({ bucket: M, buckets: 120 });
      expect(pick(2 * H + M)).toEqual({ bucket: 5 * M, buckets: 25 });
      expect(pick(10 * H)).toEqual({ bucket: 5 * M, buckets: 120 });
      expect(pick(D)).toEqual({ bucket: 15 * M, buckets: 96 });
      expect(pick(5 * D)).toEqual({ bucket: H, buckets: 120 });
      expect(pick(30 * D, new Date('2026-05-01T00:00:00Z'))).toEqual({ bucket: 6 * H, buckets: 120 });
      // From 10:00, six-hour buckets start at 06:00 and make 121.
      expect(pick(30 * D)).toEqual({ bucket: D, buckets: 31 });
      expect(pick(31 * D)).toEqual({ bucket: D, buckets: 32 });
      // Past 120 days even days make more than 120: days all the same.
      expect(pick(400 * D)).toEqual({ bucket: D, buckets: 401 });
      // A start within a bucket is aligned down to it, which may take the next width.
      expect(pick(5 * D, new Date('2026-05-01T10:30:00Z'))).toEqual({ bucket: 6 * H, buckets: 21 });
    });
  });

  describe('errors', () => {
    for (const bad of ['2h', '24H', '1d', '', 'all']) {
      it(`answers 422 naming time_range for "${bad}"`, async () => {
        const projectId = (await createProject(t, owner)).id;
        const body = expectError(await stats(projectId, { time_range: bad }), 422, 'validation_error');
        expect(Object.keys(body.errors ?? {})).toEqual(['time_range']);
      });
    }

    it('answers 422 for a non-numeric project id', async () => {
      const body = expectError(await stats('abc'), 422, 'validation_error');
      expect(body.errors).toHaveProperty(['project_id']);
    });

    it('answers 404 for a project that does not exist', async () => {
      expectError(await stats(2_000_000_000), 404, 'not_found');
    });
  });

  describe('security', () => {
    it('answers 404 to a user who is not a member', async () => {
      const projectId = (await createProject(t, owner)).id;
      await createLogs(t, projectId, [{ level: 'error' }]);
      expectError(await stats(projectId, {}, stranger), 404, 'not_found');
      expectError(await stats(projectId, { time_range: '7d' }, stranger), 404, 'not_found');
    });

    it('answers 200 to a member', async () => {
      const projectId = (await createProject(t, owner)).id;
      await addMember(t, projectId, member);
      await createLogs(t, projectId, [{ level: 'error' }, { level: 'info' }]);
      const data = await statsOk(projectId, { time_range: '1h' }, member);
      expect(data.total).toBe(2);
      expect(data.error_rate).toBe(0.5);
    });

    it('answers 401 without a token', async () => {
      const projectId = (await createProject(t, owner)).id;
      expectError(await stats(projectId, {}, null), 401, 'unauthenticated');
    });
  });
});

describe('the buckets statistics read', () => {
  const at = (iso: string) => new Date(iso);

  it('tile a range exactly with whole days in the middle, then hours, then minutes at the ends', () => {
    expect(cover(at('2026-03-01T10:17:00Z'), at('2026-03-04T13:05:00Z')).map((s) => [s.grain, s.from.toISOString(), s.to.toISOString()])).toEqual([
      ['minute', '2026-03-01T10:17:00.000Z', '2026-03-01T11:00:00.000Z'],
      ['hour', '2026-03-01T11:00:00.000Z', '2026-03-02T00:00:00.000Z'],
      ['day', '2026-03-02T00:00:00.000Z', '2026-03-04T00:00:00.000Z'],
      ['hour', '2026-03-04T00:00:00.000Z', '2026-03-04T13:00:00.000Z'],
      ['minute', '2026-03-04T13:00:00.000Z', '2026-03-04T13:05:00.000Z'],
    ]);
    expect(cover(at('2026-03-01T10:17:00Z'), at('2026-03-01T10:42:00Z')).map((s) => s.grain)).toEqual(['minute']);
    expect(cover(at('2026-03-01T00:00:00Z'), at('2026-03-31T00:00:00Z')).map((s) => s.grain)).toEqual(['day']);
    expect(cover(at('2026-03-01T10:00:00Z'), at('2026-03-01T10:00:00Z'))).toEqual([]);
  });

  it('tile any range of whole minutes without gaps or overlaps, each span on its own grain', () => {
    let seed = 7;
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    for (let i = 0; i < 500; i++) {
      const from = Date.parse('2026-01-01T00:00:00Z') + Math.floor(random() * 90 * 1440) * M;
      const to = from + Math.floor(random() * 61 * 1440) * M;
      const spans = cover(new Date(from), new Date(to));
      let edge = from;
      for (const span of spans) {
        expect(span.from.getTime()).toBe(edge);
        expect(span.to.getTime()).toBeGreaterThan(edge);
        expect(span.from.getTime() % grainMs[span.grain]).toBe(0);
        expect(span.to.getTime() % grainMs[span.grain]).toBe(0);
        edge = span.to.getTime();
      }
      expect(edge).toBe(to);
      // At most one day span, two of hours and two of minutes.
      expect(spans.length).toBeLessThanOrEqual(5);
    }
  });
});
