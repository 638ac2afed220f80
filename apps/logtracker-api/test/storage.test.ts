import { arrayLiteral, queryRows, withTransaction } from '@repo/db';
import { Counter } from '@repo/http';
import { and, desc, eq, lt, sql, type SQL } from 'drizzle-orm';
import { logs, newestFirst, oldestFirst } from '../src/db/schema/index.js';
import { createLogEvents } from '../src/modules/logs/log-events.js';
import { scanBatch, validatePlain, type BatchText } from '../src/modules/logs/batch-text.js';
import { insertLogs, insertLogsJson } from '../src/modules/logs/logs.repository.js';
import { indexedPage, searchHours, slicedPage, worthSlicing } from '../src/modules/logs/logs.indexed.repository.js';
import { keptSliceStart, sliceStart } from '../src/modules/logs/logs.slices.repository.js';
import { forgetKeptEstimates, isWideProject, keptEstimate, LEARNED_SHARE_MS, learnedShare, learnShare, searchScope } from '../src/modules/logs/logs.counts.repository.js';
import { pageShare, searchShareKey } from '../src/modules/logs/logs.search.repository.js';
import { dayBounds, where } from '../src/modules/logs/logs.filters.repository.js';
import { listCondition } from '../src/modules/logs/logs.list.repository.js';
import { createIngestMetrics } from '../src/modules/logs/logs.metrics.js';
import { createLogsService, type LogWriter } from '../src/modules/logs/logs.service.js';
import { createLogWrites } from '../src/modules/logs/logs.writes.js';
import type { ProjectAccess } from '../src/modules/projects/projects.service.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../src/config.js';
import { createMaintenanceJob } from '../src/jobs/maintenance.js';
import { createRetentionJob } from '../src/jobs/retention.js';
import { buildTestApp, createLogs, createProject, createUser, expectError, type TestApp, type TestUser } from './helpers.js';

const DAY = 86_400_000;
const quiet = { info: () => {}, error: () => {} };

let t: TestApp;
let owner: TestUser;

beforeAll(async () => {
  t = await buildTestApp();
  owner = await createUser(t);
});
afterAll(() => t.close());

const rows = <T extends Record<string, unknown>>(query: ReturnType<typeof sql>) => queryRows<T>(t.database.db, query);

/** A project's count in each rollup table at each grain: every one must be its number of logs. */
async function rollupTotals(projectId: number, db = t.database.db) {
  const totals: Record<string, number> = {};
  for (const table of ['log_level_counts', 'log_source_counts']) {
    const found = await queryRows<{ grain: string; n: number }>(
      db,
      sql`select grain, coalesce(sum(count), 0)::int as n from ${sql.raw(table)} where project_id = ${projectId} group by grain`,
    );
    for (const grain of ['minute', 'hour', 'day']) totals[`${table} ${grain}`] = found.find((r) => r.grain === grain)?.n ?? 0;
  }
  return totals;
}

const everyRollup = (n: number) =>
  Object.fromEntries(
    ['log_level_counts', 'log_source_counts'].flatMap((table) => ['minute', 'hour', 'day'].map((grain) => [`${table} ${grain}`, n])),
  );

describe('partitions', () => {
  it('stores logs of recent days in daily partitions and older ones in the default partition', async () => {
    const project = await createProject(t, owner);
    const [recent, old] = await createLogs(t, project.id, [
      { message: 'now', timestamp: new Date() },
      { message: 'long ago', timestamp: new Date(Date.now() - 400 * DAY) },
    ]);
    const placed = await rows<{ id: number | string; partition: string }>(
      sql`select id, tableoid::regclass::text as partition from logs where id in (${recent!.id}, ${old!.id}) order by id`,
    );
    const today = new Date().toISOString().slice(0, 10).replaceAll('-', '');
    expect(placed.map((p) => p.partition)).toEqual([`logs_p${today}`, 'logs_default']);
  });

  it('creates the partitions of the coming week', async () => {
    const job = createMaintenanceJob({ db: t.database.db, logger: quiet, now: () => new Date(Date.now() + 30 * DAY) });
    expect(await job.ensurePartitions()).toBe(9);
    expect(await job.ensurePartitions()).toBe(0);
  });
});

/** A batch body as the batch route's parser cuts and validates it. */
function cut(entries: unknown[]): BatchText {
  const batch = scanBatch(Buffer.from(JSON.stringify({ logs: entries })));
  if (!batch || !validatePlain(batch)) throw new Error('not a plain batch');
  return batch;
}

describe('logs of a project that is gone', () => {
  // logs has no foreign key to projects: each insert statement joins the project's row instead.
  it('are never stored, whichever way a batch is inserted', async () => {
    const project = await createProject(t, owner);
    await t.database.db.execute(sql`delete from projects where id = ${project.id}`);
    const row = { projectId: project.id, level: 'info' as const, message: 'orphan', timestamp: new Date(), receivedAt: new Date() };
    for (const withIds of [true, false]) {
      expect((await insertLogs(t.database.db, project.id, [row], withIds)).count).toBe(0);
    }
    expect((await insertLogsJson(t.database.db, project.id, cut([{ level: 'info', message: 'orphan' }]), new Date())).count).toBe(0);
    expect(await rows(sql`select id from logs where project_id = ${project.id}`)).toEqual([]);
  });

  it('answer 404 to a writer authorised just before the project went', async () => {
    const project = await createProject(t, owner);
    const events = createLogEvents();
    // The membership check passes (as it did a moment before the deletion); the insert finds no project.
    const access = { assertMember: async () => ({ role: 'owner' }) } as unknown as ProjectAccess;
    // Counters of their own (registered nowhere): the app's already hold these names.
    const ingest = createIngestMetrics({ counter: (config) => new Counter({ ...config, registers: [] }) });
    const writes = createLogWrites({ db: t.database.db, writers: 2 });
    const service = createLogsService({ db: t.database.db, plannedOnce: t.database.db, access, events, ingest, writes });
    await t.database.db.execute(sql`delete from projects where id = ${project.id}`);
    const writer = { kind: 'user' as const, actor: { userId: owner.id, role: 'user', requestId: 'test' } } as unknown as LogWriter;
    await expect(service.createBatch(writer, project.id, { logs: [{ level: 'info', message: 'late' }] })).rejects.toMatchObject({
      code: 'not_found',
    });
    await expect(service.createBatch(writer, project.id, cut([{ level: 'info', message: 'late' }]))).rejects.toMatchObject({ code: 'not_found' });
    expect(await rows(sql`select id from logs where project_id = ${project.id}`)).toEqual([]);
  });
});

describe('inserts of logs', () => {
  it('run a few at once (INGEST_WRITERS), every other one waiting its turn, and all are stored', async () => {
    const project = await createProject(t, owner);
    const access = { assertMember: async () => ({ role: 'owner' }) } as unknown as ProjectAccess;
    const ingest = createIngestMetrics({ counter: (config) => new Counter({ ...config, registers: [] }) });
    // The queue as the app builds it, with one writer, counting the statements that stored requests.
    const statements: number[] = [];
    const writes = createLogWrites({ db: t.database.db, writers: 1, onStatement: (requests) => statements.push(requests) });
    const service = createLogsService({ db: t.database.db, plannedOnce: t.database.db, access, events: createLogEvents(), ingest, writes });
    const writer = { kind: 'user' as const, actor: { userId: owner.id, role: 'user', requestId: 'test' } } as unknown as LogWriter;
    const entries = (n: number, tag: string) => Array.from({ length: n }, (_, i) => ({ level: 'info' as const, message: `${tag} ${i}` }));
    // Every insert path at once: parsed batches, batches stored from their text, single logs, mapped rows (OTLP).
    const requests = [
      ...Array.from({ length: 3 }, (_, i) => () => service.createBatch(writer, project.id, { logs: entries(40, `parsed ${i}`) })),
      ...Array.from({ length: 3 }, (_, i) => () => service.createBatch(writer, project.id, cut(entries(40, `text ${i}`)))),
      ...Array.from({ length: 3 }, (_, i) => () => service.create(writer, project.id, { level: 'warning', message: `one ${i}` })),
      () => service.storeMapped(writer, project.id, [{ projectId: project.id, level: 'error', message: 'mapped', timestamp: new Date(), receivedAt: new Date() }]),
    ];
    // The one writer busy until released: every request waits its turn behind it.
    let release = () => {};
    const held = writes.alone(() => new Promise<void>((resolve) => (release = resolve)));
    const answers = Promise.all(requests.map((request) => request()));
    while (writes.waiting < requests.length) await new Promise((resolve) => setTimeout(resolve, 1));
    release();
    await Promise.all([held, answers]);
    // Queued for one project, they were stored by one statement.
    expect(statements).toEqual([requests.length]);
    const [stored] = await rows<{ n: number }>(sql`select count(*)::int as n from logs where project_id = ${project.id}`);
    expect(stored?.n).toBe(3 * 40 + 3 * 40 + 3 + 1);
  });

  it('take their number of writers from INGEST_WRITERS: 2 by default, at least 1', () => {
    const base = { NODE_ENV: 'test', DATA_DIR: 'memory://' };
    expect(loadConfig(base).logs.writers).toBe(2);
    expect(loadConfig({ ...base, INGEST_WRITERS: '4' }).logs.writers).toBe(4);
    expect(() => loadConfig({ ...base, INGEST_WRITERS: '0' })).toThrow(/INGEST_WRITERS/);
  });
});

describe('rollups', () => {
  it('count every insert path and every delete, and compaction keeps the sums', async () => {
    const project = await createProject(t, owner);
    await createLogs(t, project.id, Array.from({ length: 30 }, (_, i) => ({ message: `direct ${i}`, timestamp: new Date(Date.now() - i * 60_000) })));
    const batch = await t.app.inject({
      method: 'POST',
      url: `/api/projects/${project.id}/logs/batch`,
      headers: owner.headers,
      payload: { logs: Array.from({ length: 20 }, (_, i) => ({ level: i % 2 ? 'error' : 'info', message: `api ${i}` })) },
    });
    expect(batch.statusCode).toBe(201);
    expect(await rollupTotals(project.id)).toEqual(everyRollup(50));

    await t.database.db.execute(sql`update projects set retention_days = 1 where id = ${project.id}`);
    await createLogs(t, project.id, [{ message: 'old', timestamp: new Date(Date.now() - 3 * DAY) }]);
    expect(await rollupTotals(project.id)).toEqual(everyRollup(51));
    await createRetentionJob({ db: t.database.db, logger: quiet, batchSize: 100, pauseMs: 0 }).runOnce();
    expect(await rollupTotals(project.id)).toEqual(everyRollup(50));

    const before = await rows<{ n: number }>(sql`select count(*)::int as n from log_source_counts where project_id = ${project.id}`);
    const result = await createMaintenanceJob({ db: t.database.db, logger: quiet, now: () => new Date(Date.now() + 120_000) }).runOnce();
    const after = await rows<{ n: number }>(sql`select count(*)::int as n from log_source_counts where project_id = ${project.id}`);
    expect(result.rollupRowsCompacted).toBeGreaterThan(0);
    expect(after[0]!.n).toBeLessThan(before[0]!.n);
    expect(await rollupTotals(project.id)).toEqual(everyRollup(50));

    const stats = (await t.app.inject({ method: 'GET', url: `/api/projects/${project.id}/stats?time_range=1h`, headers: owner.headers })).json();
    expect(stats.data.total).toBe(50);
    expect(stats.data.by_level).toEqual({ error: 10, warning: 0, info: 40, debug: 0 });
  });
});

describe('expired rollups', () => {
  it('are deleted grain by grain past their keep, for every project the rollups hold, gone ones included', async () => {
    const project = await createProject(t, owner);
    const gone = 2_000_000_000;
    const at = (days: number) => new Date(Date.now() - days * DAY - 3_600_000).toISOString();
    for (const projectId of [project.id, gone]) {
      for (const [grain, days] of [['minute', 1], ['minute', 4], ['hour', 30], ['hour', 63], ['day', 61], ['day', 70]] as const) {
        await t.database.db.execute(sql`insert into log_level_counts (project_id, grain, bucket, level, count, compacted)
                                        values (${projectId}, ${grain}, ${at(days)}::timestamptz, 'info', 1, true)`);
        await t.database.db.execute(sql`insert into log_source_counts (project_id, grain, bucket, source, count, compacted)
                                        values (${projectId}, ${grain}, ${at(days)}::timestamptz, 'api', 1, true)`);
      }
    }
    await createMaintenanceJob({ db: t.database.db, logger: quiet }).runOnce();
    for (const table of ['log_level_counts', 'log_source_counts']) {
      const left = await rows<{ project_id: number; grain: string; days: number }>(
        sql`select project_id, grain, round(extract(epoch from now() - bucket) / 86400)::int as days
              from ${sql.raw(table)} where project_id in (${project.id}, ${gone}) order by project_id, grain, bucket desc`,
      );
      const kept = [
        { grain: 'day', days: 61 },
        { grain: 'hour', days: 30 },
        { grain: 'minute', days: 1 },
      ];
      expect(left).toEqual([...kept.map((k) => ({ project_id: project.id, ...k })), ...kept.map((k) => ({ project_id: gone, ...k }))]);
    }
  });
});

describe('tables every ingest writes to', () => {
  const ingestTables = ['log_level_counts', 'log_source_counts', 'idempotency_keys', 'rate_limit_counters'];

  it('keep their empty tail pages through a vacuum, which would lock out every insert to cut them', async () => {
    const options = await rows<{ name: string; options: string[] | null }>(
      sql`select relname as name, reloptions as options from pg_class
           where relnamespace = 'logtracker'::regnamespace and relname = any(${arrayLiteral(ingestTables)}::text[]) order by relname`,
    );
    expect(options).toEqual([...ingestTables].sort().map((name) => ({ name, options: ['vacuum_truncate=false'] })));

    // A rollup's newest pages emptied (retention, a merge), then vacuumed: the table keeps them.
    const bucket = new Date(Date.now() - 3_600_000).toISOString();
    await t.database.db.execute(sql`insert into log_level_counts (project_id, grain, bucket, level, count, compacted)
                                    select 1999999999, 'minute', ${bucket}::timestamptz, 'info', n, true from generate_series(1, 3000) as n`);
    const size = async () => Number((await rows<{ n: number | string }>(sql`select pg_relation_size('log_level_counts') as n`))[0]!.n);
    const filled = await size();
    await t.database.db.execute(sql`delete from log_level_counts where project_id = 1999999999`);
    await t.database.db.execute(sql`vacuum log_level_counts`);
    expect(await size()).toBe(filled);
  });
});

describe('keyset paging and counts', () => {
  let projectId: number;
  const list = (query: string) =>
    t.app.inject({ method: 'GET', url: `/api/projects/${projectId}/logs?${query}`, headers: owner.headers });

  beforeAll(async () => {
    projectId = (await createProject(t, owner)).id;
    const base = Date.now();
    // Pairs share a timestamp, so the id breaks ties.
    await createLogs(
      t,
      projectId,
      Array.from({ length: 25 }, (_, i) => ({
        level: i % 5 === 0 ? ('error' as const) : ('info' as const),
        message: `entry ${i}`,
        timestamp: new Date(base - Math.floor(i / 2) * 1000),
      })),
    );
  });

  it('walks the whole list with next_cursor, in the same order as page numbers', async () => {
    const byPage: number[] = [];
    for (let page = 1; page <= 3; page++) byPage.push(...(await list(`per_page=10&page=${page}`)).json().data.map((l: { id: number }) => l.id));
    const byCursor: number[] = [];
    let query = 'per_page=10';
    for (let i = 0; i < 5; i++) {
      const { data, meta } = (await list(query)).json();
      byCursor.push(...data.map((l: { id: number }) => l.id));
      if (!meta.next_cursor) break;
      query = `per_page=10&cursor=${meta.next_cursor}`;
    }
    expect(byCursor).toEqual(byPage);
    expect(byCursor).toHaveLength(25);
    expect(new Set(byCursor).size).toBe(25);
  });

  it('keeps filters along the cursor and ends with a null cursor', async () => {
    const first = (await list('level=error&per_page=3')).json();
    expect(first.meta).toMatchObject({ total: 5, total_is_estimate: false });
    const second = (await list(`level=error&per_page=3&cursor=${first.meta.next_cursor}`)).json();
    expect(first.data.map((l: { message: string }) => l.message)).toEqual(['entry 0', 'entry 5', 'entry 10']);
    expect(second.data.map((l: { message: string }) => l.message)).toEqual(['entry 15', 'entry 20']);
    expect(second.meta.next_cursor).toBeNull();
  });

  it('is not shifted by logs that arrive while paging', async () => {
    const first = (await list('per_page=5')).json();
    await createLogs(t, projectId, [{ message: 'newcomer', timestamp: new Date() }]);
    const second = (await list(`per_page=5&cursor=${first.meta.next_cursor}`)).json();
    const firstIds = first.data.map((l: { id: number }) => l.id);
    expect(second.data.some((l: { id: number }) => firstIds.includes(l.id))).toBe(false);
    expect(second.data.some((l: { message: string }) => l.message === 'newcomer')).toBe(false);
  });

  it('refuses a made-up cursor, and a cursor with a page', async () => {
    expectError(await list('cursor=bm90LWEtY3Vyc29y'), 422, 'validation_error');
    const outOfRange = Buffer.from('-000100-01-01T00:00:00.000Z|5').toString('base64url');
    expectError(await list(`cursor=${outOfRange}`), 422, 'validation_error');
    const { meta } = (await list('per_page=5')).json();
    const both = expectError(await list(`page=2&cursor=${meta.next_cursor}`), 422, 'validation_error');
    expect(both.errors).toHaveProperty(['cursor']);
  });

  it('counts exactly up to 10 000 matches and marks an estimate beyond', async () => {
    const big = await createProject(t, owner);
    const now = Date.now();
    for (let start = 0; start < 10_050; start += 2_500) {
      await createLogs(
        t,
        big.id,
        Array.from({ length: Math.min(2_500, 10_050 - start) }, (_, i) => ({ message: `bulk ${start + i}`, timestamp: new Date(now - (start + i) * 1000) })),
      );
    }
    await t.database.db.execute(sql`analyze logs`);
    const get = async (query: string) =>
      (await t.app.inject({ method: 'GET', url: `/api/projects/${big.id}/logs?per_page=1&${query}`, headers: owner.headers })).json();
    // A list filtered by level at most is counted exactly from the daily rollups, whatever its size.
    expect((await get('')).meta).toMatchObject({ total: 10_050, total_is_estimate: false });
    expect((await get('level=info')).meta).toMatchObject({ total: 10_050, total_is_estimate: false });
    expect((await get('level=error')).meta).toMatchObject({ total: 0, total_is_estimate: false });
    // A list bounded in time within the minute rollups' keep: their whole minutes, and the logs of
    // its partial minutes counted, exact whatever its size.
    const iso = (ms: number) => encodeURIComponent(new Date(ms).toISOString());
    expect((await get(`from_date=${iso(now - 20_000_000)}`)).meta).toMatchObject({ total: 10_050, total_is_estimate: false });
    expect((await get(`from_date=${iso(now - 5_000_500)}`)).meta).toMatchObject({ total: 5_001, total_is_estimate: false });
    expect((await get(`from_date=${iso(now - 5_000_500)}&to_date=${iso(now - 100_500)}`)).meta).toMatchObject({ total: 4_900, total_is_estimate: false });
    expect((await get(`from_date=${iso(now - 5_000_500)}&to_date=${iso(now - 4_990_500)}`)).meta).toMatchObject({ total: 10, total_is_estimate: false });
    expect((await get(`from_date=${iso(now - 5_000_500)}&level=error`)).meta).toMatchObject({ total: 0, total_is_estimate: false });
    // Other lists are counted up to 10 000, and estimated beyond: a range starting before the minute
    // rollups' keep, say.
    const ranged = await get(`from_date=${iso(now - 4 * 86_400_000)}`);
    expect(ranged.meta.total_is_estimate).toBe(true);
    expect(ranged.meta.total).toBeGreaterThan(10_000);
    // A partial minute of more than 10 000 logs is not counted: the range's total is estimated from
    // that minute's share of its rollup.
    const dense = await createProject(t, owner);
    const minute = Math.floor(now / 60_000) * 60_000 - 120_000;
    await t.database.db.execute(
      sql`insert into logs (project_id, level, message, "timestamp")
          select ${dense.id}, 'info', 'dense ' || i, ${new Date(minute).toISOString()}::timestamptz + make_interval(secs => i * 0.004)
            from generate_series(0, 14999) as i`,
    );
    const most = (await t.app.inject({ method: 'GET', url: `/api/projects/${dense.id}/logs?per_page=1&from_date=${iso(minute + 10_000)}`, headers: owner.headers })).json();
    expect(most.meta.total_is_estimate).toBe(true);
    expect(most.meta.total).toBeGreaterThan(12_000);
    expect(most.meta.total).toBeLessThan(13_000);
    const quarter = (await t.app.inject({ method: 'GET', url: `/api/projects/${dense.id}/logs?per_page=1&from_date=${iso(minute + 45_000)}`, headers: owner.headers })).json();
    expect(quarter.meta).toMatchObject({ total: 3_750, total_is_estimate: false });
    // A retention longer than the daily rollups are kept: they may not cover every log, so no count from them.
    await t.database.db.execute(sql`update projects set retention_days = 365 where id = ${big.id}`);
    const long = await get('');
    expect(long.meta.total_is_estimate).toBe(true);
    expect(long.meta.total).toBeGreaterThan(10_000);
    await t.database.db.execute(sql`update projects set retention_days = 30 where id = ${big.id}`);
    const few = (await t.app.inject({ method: 'GET', url: `/api/projects/${big.id}/logs?search=bulk%201004`, headers: owner.headers })).json();
    expect(few.meta).toMatchObject({ total: 11, total_is_estimate: false });
  }, 120_000);
});

describe('query plans', () => {
  type PlanNode = { 'Node Type': string; Plans?: PlanNode[] };
  const nodeTypes = (node: PlanNode): string[] => [node['Node Type'], ...(node.Plans ?? []).flatMap(nodeTypes)];

  /** The node types of a query's plan with sorting priced out: a Sort is left only where no index gives the order. */
  async function planWithoutSorting(query: { getSQL(): SQL }) {
    return withTransaction(t.database.db, async (tx) => {
      await tx.execute(sql`set local enable_sort = off`);
      const [row] = await queryRows<{ 'QUERY PLAN': string | { Plan: PlanNode }[] }>(tx, sql`explain (format json) ${query.getSQL()}`);
      const raw = row!['QUERY PLAN'];
      return nodeTypes((typeof raw === 'string' ? (JSON.parse(raw) as { Plan: PlanNode }[]) : raw)[0]!.Plan);
    });
  }

  it('reads newest-first and oldest-first pages from an index instead of sorting the project', async () => {
    const project = await createProject(t, owner);
    const db = t.database.db;
    const byProject = eq(logs.projectId, project.id);
    const sorts = (types: string[]) => types.filter((type) => type.includes('Sort'));

    expect(sorts(await planWithoutSorting(db.select().from(logs).where(byProject).orderBy(...newestFirst).limit(50)))).toEqual([]);
    expect(
      sorts(await planWithoutSorting(db.select().from(logs).where(and(byProject, eq(logs.level, 'error'))).orderBy(...newestFirst).limit(50))),
    ).toEqual([]);
    expect(
      sorts(await planWithoutSorting(db.select({ id: logs.id }).from(logs).where(and(byProject, lt(logs.timestamp, new Date()))).orderBy(oldestFirst[0]).limit(50))),
    ).toEqual([]);
    // The order a plain `desc` asks for (nulls first) is one no index holds: this is what sorted.
    expect(sorts(await planWithoutSorting(db.select().from(logs).where(byProject).orderBy(desc(logs.timestamp), desc(logs.id)).limit(50)))).not.toEqual([]);
  });
});

describe('paging to the microsecond', () => {
  it('walks logs that share a millisecond in order with the cursor, each once', async () => {
    const project = await createProject(t, owner);
    // Written by SQL, as an import would: timestamps a microsecond apart, all in one millisecond.
    await t.database.db.execute(
      sql`insert into logs (project_id, level, message, "timestamp")
          select ${project.id}, 'info', 'micro ' || i, '2026-03-01T10:00:00.123Z'::timestamptz + make_interval(secs => i / 1000000.0)
            from generate_series(1, 7) as i`,
    );
    const seen: string[] = [];
    let query = 'per_page=2';
    for (let i = 0; i < 10; i++) {
      const response = await t.app.inject({ method: 'GET', url: `/api/projects/${project.id}/logs?${query}`, headers: owner.headers });
      expect(response.statusCode, response.body).toBe(200);
      const { data, meta } = response.json();
      seen.push(...data.map((l: { message: string }) => l.message));
      if (!meta.next_cursor) break;
      query = `per_page=2&cursor=${meta.next_cursor}`;
    }
    expect(seen).toEqual(['micro 7', 'micro 6', 'micro 5', 'micro 4', 'micro 3', 'micro 2', 'micro 1']);
  });
});

/**
 * The time the newest logs of a slice's tests end: now, or a second before midnight early in a UTC
 * day, so that they lie in the day partition holding every log before them (2 h 49 min of them).
 */
function newestMinute(): number {
  const clock = Date.now();
  return clock % DAY < 10_200_000 ? clock - (clock % DAY) - 1_000 : clock;
}

/**
 * A project of 20 000 logs of the last hours ("Request i served"), then 6 000 of the minute before
 * `now`, one in 200 through the gateway ("Request i through gateway", i % 200 = 3); the logs
 * analysed between the two when `analysed` (the newest minutes newer than the statistics).
 */
async function newestMinutesProject(now: number, { analysed = false } = {}): Promise<number> {
  const project = (await createProject(t, owner)).id;
  await t.database.db.execute(
    sql`insert into logs (project_id, level, message, "timestamp")
        select ${project}, 'info', 'Request ' || i || ' served', ${new Date(now - 120_000).toISOString()}::timestamptz - make_interval(secs => i * 0.5)
          from generate_series(1, 20000) as i`,
  );
  if (analysed) await t.database.db.execute(sql`analyze logs`);
  await t.database.db.execute(
    sql`insert into logs (project_id, level, message, "timestamp")
        select ${project}, 'info', case when i % 200 = 3 then 'Request ' || i || ' through gateway' else 'Request ' || i || ' served' end,
               ${new Date(now).toISOString()}::timestamptz - make_interval(secs => i * 0.01)
          from generate_series(1, 6000) as i`,
  );
  return project;
}

describe("a slice's start, kept", () => {
  // A search run again within seconds reads its slice from the start the last one read
  // (keptSliceStart); logs that arrived meanwhile are newer than that start, in its slice.
  let project: number;
  const now = newestMinute();

  beforeAll(async () => {
    project = await newestMinutesProject(now);
  }, 120_000);

  it('for a few seconds under its project, level, bounds and size, and not past new statistics', async () => {
    const first = keptSliceStart(t.database.db, project, {}, 3_000);
    expect(keptSliceStart(t.database.db, project, {}, 3_000)).toBe(first);
    const others = [
      keptSliceStart(t.database.db, project, { level: 'error' }, 3_000),
      keptSliceStart(t.database.db, project, { to: new Date(now - 30_000) }, 3_000),
      keptSliceStart(t.database.db, project, {}, 4_000),
    ];
    for (const other of others) expect(other).not.toBe(first);
    await Promise.all(others);
    // The same start as a read of the rollups now.
    expect(await first).toEqual(await sliceStart(t.database.db, project, {}, 3_000));
    forgetKeptEstimates();
    const again = keptSliceStart(t.database.db, project, {}, 3_000);
    expect(again).not.toBe(first);
    expect(await again).toEqual(await first);
  });

  it('pages the newest matches from a kept start, a log that arrived since among them', async () => {
    const latest = new Date(Math.floor(now / 3_600_000) * 3_600_000);
    const page = () => slicedPage(t.database.db, project, { search: 'gateway' }, 20, 0.005, { listRows: 26_000, scope: { wideProject: false, latest } });
    const before = await page();
    expect(before!.rows.map((l) => l.message)).toEqual(
      Array.from({ length: 6000 }, (_, k) => k + 1)
        .filter((i) => i % 200 === 3)
        .slice(0, 20)
        .map((i) => `Request ${i} through gateway`),
    );
    await t.database.db.execute(
      sql`insert into logs (project_id, level, message, "timestamp") values (${project}, 'info', 'Request late through gateway', ${new Date(now - 5).toISOString()}::timestamptz)`,
    );
    const after = await page();
    expect(after!.rows.map((l) => l.message)).toEqual(['Request late through gateway', ...before!.rows.slice(0, 19).map((l) => l.message)]);
  });
});

describe('a search of the newest minutes, newer than the statistics', () => {
  // Logs keep arriving in a partition after its last ANALYZE: the planner reads a range of the
  // newest minutes as holding none. A search's slice and a search of a few hours must still find
  // their matches through the text's keys, not by reading every log of the range, and a page's
  // rows by their key.
  let project: number;
  // The newest minute must lie in the day partition holding every analysed log: early in a UTC day
  // it lay in a partition that saw few of them or none, whose statistics the planner reads as
  // another case (it failed here at 00:01 and 00:11); newestMinute ends them before midnight then.
  const now = newestMinute();
  const LATEST = new Date('9999-12-31T23:59:59.999Z');
  const message = (i: number) => (i % 200 === 3 ? `Request ${i} through gateway` : `Request ${i} served`);

  beforeAll(async () => {
    // 20 000 logs of the last hours, analysed; then 6 000 of the last minute, after the analysis.
    project = await newestMinutesProject(now, { analysed: true });
  }, 120_000);

  /** The indexes the plan of these filters reads, as a search on the index path plans them (indexedPage). */
  async function indexesRead(condition: SQL | undefined, from: SQL = sql`logs`, partition?: string) {
    return withTransaction(t.database.db, async (tx) => {
      await tx.execute(sql`select set_config('enable_indexscan', 'off', true), set_config('enable_seqscan', 'off', true)`);
      const [row] = await queryRows<{ 'QUERY PLAN': unknown }>(tx, sql`explain (format json) select 1 from ${from} where ${condition}`);
      const plan = typeof row!['QUERY PLAN'] === 'string' ? row!['QUERY PLAN'] : JSON.stringify(row!['QUERY PLAN']);
      const names = [...plan.matchAll(/"Index Name":\s*"(\w+)"/g)].map((m) => m[1]!);
      return new Set(names.filter((n) => !partition || n.startsWith(`${partition}_`)).map((n) => n.replace(/^logs_(p\d+|default)_/, '')));
    });
  }

  it('plans a slice\'s range and a few hours\' range as more than empty, and finds the same matches through the hours\' keys and the time index', async () => {
    const from = new Date(now - 60_000);
    const latest = new Date(Math.floor(now / 3_600_000) * 3_600_000);
    const hours = searchHours({ from, latest });
    expect(hours?.length).toBeGreaterThan(0);
    // Their bounds as the planner reads them: not a range it takes for empty (on a partition of
    // millions of logs, it then read every log of the range and checked its text on its row).
    for (const filters of [
      { from, before: LATEST, hours },
      { from, before: LATEST, slice: true },
    ]) {
      const [row] = await rows<{ 'QUERY PLAN': unknown }>(sql`explain (format json) select id from logs where ${where(project, filters)}`);
      const plan = typeof row!['QUERY PLAN'] === 'string' ? row!['QUERY PLAN'] : JSON.stringify(row!['QUERY PLAN']);
      expect(Number(/"Plan Rows":\s*(\d+)/.exec(plan)![1]), JSON.stringify(filters)).toBeGreaterThan(50);
    }
    // The same matches, newest first, through the hours' keys and through the time index alike.
    const wanted = Array.from({ length: 6000 }, (_, k) => k + 1).filter((i) => i % 200 === 3).map(message);
    for (const hourKeys of [true, false]) {
      const page = await indexedPage(t.database.db, project, { search: 'gateway', from, before: LATEST, slice: true, latest }, 20, 0, { hourKeys });
      expect(page.rows.map((l) => l.message)).toEqual(wanted.slice(0, 20));
      expect(page.matched).toBe(wanted.length);
    }
    const sliced = await slicedPage(t.database.db, project, { search: 'gateway' }, 20, 0.005, { listRows: 26_000, scope: { wideProject: false, latest } });
    expect(sliced!.rows.map((l) => l.message)).toEqual(wanted.slice(0, 20));
  });

  it("sizes a slice from the minute rollups: where it starts, the logs from there on, and its hour's logs", async () => {
    // What the rollups hold from an instant on, before `upper` and of `level` when given.
    const summed = async (from: Date, upper?: Date, level?: string) => {
      const [row] = await rows<{ n: string | number | null }>(
        sql`select sum(count) as n from log_level_counts
             where project_id = ${project} and grain = 'minute' and bucket >= ${from.toISOString()}::timestamptz
               ${upper ? sql`and bucket <= ${upper.toISOString()}::timestamptz` : sql``} ${level ? sql`and level = ${level}` : sql``}`,
      );
      return Number(row!.n ?? 0);
    };
    const hourOf = (d: Date) => new Date(Math.floor(d.getTime() / 3_600_000) * 3_600_000);
    for (const [filters, wanted] of [
      [{}, 3_000],
      [{}, 12_000],
      [{ level: 'info' as const }, 7_000],
      [{ to: new Date(now - 600_000) }, 5_000],
    ] as const) {
      const slice = await sliceStart(t.database.db, project, filters, wanted);
      const upper = 'to' in filters ? filters.to : undefined;
      const level = 'level' in filters ? filters.level : undefined;
      expect(slice, JSON.stringify(filters)).toBeDefined();
      expect(slice!.rowsBelow).toBe(await summed(slice!.start, upper, level));
      expect(slice!.rowsBelow).toBeGreaterThanOrEqual(wanted);
      expect(slice!.hourRows).toBe(await summed(hourOf(slice!.start), upper, level));
    }
  });

  it('reads a page of a list bounded to the newest minutes from the index in order, not every log of the range', async () => {
    /** The node types of a page's plan and the rows its scans read, as run (EXPLAIN ANALYZE). */
    const run = async (condition: SQL | undefined) => {
      type Node = { 'Node Type': string; 'Actual Rows': number; 'Actual Loops': number; Plans?: Node[] };
      const [row] = await rows<{ 'QUERY PLAN': unknown }>(
        sql`explain (analyze, format json) ${t.database.db.select({ id: logs.id }).from(logs).where(condition).orderBy(...newestFirst).limit(50).getSQL()}`,
      );
      const raw = row!['QUERY PLAN'];
      const all = (node: Node): Node[] => [node, ...(node.Plans ?? []).flatMap(all)];
      const nodes = all((typeof raw === 'string' ? (JSON.parse(raw) as { Plan: Node }[]) : (raw as { Plan: Node }[]))[0]!.Plan);
      const scanned = nodes.filter((n) => n['Node Type'].includes('Scan')).reduce((sum, n) => sum + n['Actual Rows'] * n['Actual Loops'], 0);
      return { types: nodes.map((n) => n['Node Type']), scanned };
    };
    const filters = { from: new Date(now - 60_000) };
    // With its bounds as values, the planner took the newest minute for empty (statistics older than
    // it), fetched its logs and sorted them: every log of the range for a page. Hidden
    // (listCondition): the page's 50 rows, read in the index's order.
    const hidden = await run(listCondition(project, filters));
    expect(hidden.types.filter((type) => type.includes('Sort'))).toEqual([]);
    expect(hidden.scanned).toBeLessThanOrEqual(51);
    // The same page through the API, newest first.
    const url = `/api/projects/${project}/logs?from_date=${encodeURIComponent(filters.from.toISOString())}&per_page=50`;
    const page = (await t.app.inject({ method: 'GET', url, headers: owner.headers })).json();
    expect(page.data.map((l: { message: string }) => l.message)).toEqual(Array.from({ length: 50 }, (_, k) => message(k + 1)));
  });

  it('reads a page\'s rows by their key within whole days', async () => {
    // The days' bounds leave the other days' partitions unplanned, and read as whole days the
    // planner does not take the range for empty.
    const from = new Date(now - 60_000);
    const day = Math.floor(from.getTime() / DAY) * DAY;
    const bounds = (filters: Parameters<typeof dayBounds>[0]) => {
      const condition = dayBounds(filters);
      return condition ? t.database.db.select({ id: logs.id }).from(logs).where(condition).toSQL().params : [];
    };
    expect(bounds({ from, before: LATEST })).toEqual([new Date(day).toISOString()]);
    expect(bounds({ from, to: new Date(now) })).toEqual([new Date(day).toISOString(), new Date(Math.floor(now / DAY) * DAY + DAY).toISOString()]);
    expect(bounds({ after: { timestamp: new Date(day + 5).toISOString(), id: 1 } })).toEqual([new Date(day + DAY).toISOString()]);
    expect(bounds({ days: { from: new Date(day - DAY), to: new Date(day + DAY) } })).toEqual([new Date(day - DAY).toISOString(), new Date(day + DAY).toISOString()]);
    expect(bounds({ before: new Date(day + 1) })).toEqual([new Date(day + DAY).toISOString()]);
    expect(bounds({})).toEqual([]);
    // The newest log, read by its key as indexedPage reads a page's rows: through the primary key.
    const newest = await rows<{ id: number; ts: string }>(
      sql`select id, to_char("timestamp" at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as ts from logs where project_id = ${project} order by "timestamp" desc limit 1`,
    );
    const page = sql`(values ${sql.join(newest.map((l) => sql`(${l.id}::bigint, ${l.ts}::timestamptz)`), sql`, `)}) as page(id, "timestamp")`;
    const probe = and(eq(logs.projectId, project), sql`${logs.id} = page.id`, sql`${logs.timestamp} = page."timestamp"`, dayBounds({ from, before: LATEST }));
    // In the partition of the newest logs (the others the days' bounds leave are pruned as it runs).
    const partition = `logs_p${new Date(now).toISOString().slice(0, 10).replaceAll('-', '')}`;
    expect([...(await indexesRead(sql`true`, sql`${page} cross join lateral (select ${logs.id} from ${logs} where ${probe}) as row`, partition))]).toEqual(['pkey']);
  });
});

describe('search over many logs', () => {
  // One project where "timeout" is common (a quarter of the logs) and "deadlock" rare (7 logs),
  // another full of "elsewhere", absent from the first; analysed, so the planner knows. The list
  // reads common words in index order and rare ones through the trigram index: both must give
  // the same answers as a plain filter.
  let mine: number;
  let other: number;
  let expected: { id: number; message: string }[];
  const list = (projectId: number, query: string) =>
    t.app.inject({ method: 'GET', url: `/api/projects/${projectId}/logs?${query}`, headers: owner.headers });

  beforeAll(async () => {
    mine = (await createProject(t, owner)).id;
    other = (await createProject(t, owner)).id;
    const base = Date.now() - 3_600_000;
    const messages = Array.from({ length: 3_000 }, (_, i) =>
      i % 400 === 7 ? `Deadlock detected on invoice ${i}` : i % 4 === 0 ? `Upstream timeout after ${i} ms` : `Request ${i} served`,
    );
    const created = await createNewestFirst(mine, messages, base);
    for (let start = 0; start < 2_000; start += 1_000) {
      await createLogs(t, other, Array.from({ length: 1_000 }, (_, i) => ({ message: `elsewhere ${start + i}` })));
    }
    await t.database.db.execute(sql`analyze logs`);
    expected = created.map((l) => ({ id: l.id, message: l.message }));
  }, 120_000);

  /** Logs with these messages, a second apart going back from `base`, in batches of 1 000. */
  async function createNewestFirst(projectId: number, messages: string[], base: number) {
    const created = [];
    for (let start = 0; start < messages.length; start += 1_000) {
      const batch = messages.slice(start, start + 1_000).map((message, i) => ({ message, timestamp: new Date(base - (start + i) * 1000) }));
      created.push(...(await createLogs(t, projectId, batch)));
    }
    return created;
  }

  /** Every page of a search with the cursor, and the total of the first page. */
  async function walk(projectId: number, search: string, perPage: number) {
    const messages: string[] = [];
    let first: { total: number; total_is_estimate: boolean } | undefined;
    let query = `search=${search}&per_page=${perPage}`;
    for (let i = 0; i < 100; i++) {
      const response = await list(projectId, query);
      expect(response.statusCode, response.body).toBe(200);
      const { data, meta } = response.json();
      first ??= meta;
      messages.push(...data.map((l: { message: string }) => l.message));
      if (!meta.next_cursor) break;
      query = `search=${search}&per_page=${perPage}&cursor=${meta.next_cursor}`;
    }
    return { messages, first: first! };
  }

  const matching = (word: string) => expected.filter((l) => l.message.toLowerCase().includes(word)).map((l) => l.message);

  it('pages a common word newest first, every match once', async () => {
    const { messages, first } = await walk(mine, 'TIMEOUT', 100);
    expect(messages).toEqual(matching('timeout'));
    expect(messages).toHaveLength(750);
    expect(first).toMatchObject({ total: 750, total_is_estimate: false });
  });

  it('pages a rare word newest first and counts it exactly', async () => {
    const { messages, first } = await walk(mine, 'deadlock', 3);
    expect(messages).toEqual(matching('deadlock'));
    expect(messages).toHaveLength(8);
    expect(first).toMatchObject({ total: 8, total_is_estimate: false });
  });

  it('computes a word\'s keys once for a search of every day, not once a partition', async () => {
    // A search unbounded in time runs its generic plan (indexedPage), where the keys are an
    // expression of the statement's parameters: each daily partition's index scan computed them
    // anew as it started (11 against 4 ms for a rare word over 30 days). A wide project's search
    // looks up the keys in every partition (and-ed with the project's b-tree, a partition without
    // the project's logs would skip them).
    const calls = await withTransaction(t.database.db, async (tx) => {
      await tx.execute(sql`set local track_functions = 'all'`);
      const page = await indexedPage(tx, mine, { search: 'deadlock', wideProject: true }, 3, 0);
      expect(page.rows.map((l) => l.message)).toEqual(matching('deadlock').slice(0, 3));
      expect(page.matched).toBe(8);
      const [row] = await queryRows<{ calls: number | string }>(
        tx,
        sql`select coalesce(sum(calls), 0) as calls from pg_stat_xact_user_functions where funcname = 'log_search_query_keys'`,
      );
      return Number(row!.calls);
    });
    expect(calls).toBe(1);
  });

  it('answers a word common in another project and absent from this one with nothing', async () => {
    const response = await list(mine, 'search=elsewhere');
    expect(response.json()).toMatchObject({ data: [], meta: { total: 0, total_is_estimate: false, next_cursor: null } });
    expect((await list(other, 'search=elsewhere&per_page=5')).json().meta).toMatchObject({ total: 2_000 });
  });

  it('answers an offset page of a rare word, and an empty page past its last match', async () => {
    const page2 = (await list(mine, 'search=deadlock&per_page=3&page=2')).json();
    expect(page2.data.map((l: { message: string }) => l.message)).toEqual(matching('deadlock').slice(3, 6));
    expect(page2.meta).toMatchObject({ total: 8, total_is_estimate: false });
    const beyond = (await list(mine, 'search=deadlock&per_page=3&page=4')).json();
    expect(beyond.data).toEqual([]);
    expect(beyond.meta).toMatchObject({ total: 8, total_is_estimate: false });
  });

  it('pages a word common in older logs and sparse among the newest, every match once', async () => {
    // A quarter of the logs match overall, so the list starts with a walk of the newest; among
    // the newest 4 000 only one in 50 does, so the first walk comes short and a longer one follows.
    const sparse = (await createProject(t, owner)).id;
    const base = Date.now() - 7_200_000;
    const messages = Array.from({ length: 8_000 }, (_, i) =>
      (i < 4_000 ? i % 50 === 3 : i % 2 === 0) ? `Upstream timeout after ${i} ms` : `Request ${i} served`,
    );
    const created = await createNewestFirst(sparse, messages, base);
    await t.database.db.execute(sql`analyze logs`);
    const wanted = created.filter((l) => l.message.includes('timeout')).map((l) => l.message);
    const first = (await list(sparse, 'search=timeout&per_page=50')).json();
    expect(first.data.map((l: { message: string }) => l.message)).toEqual(wanted.slice(0, 50));
    expect(first.meta.total).toBeGreaterThanOrEqual(50);
    const { messages: all } = await walk(sparse, 'timeout', 500);
    expect(all).toEqual(wanted);
  }, 120_000);

  it('estimates the total of a common word from the share of it among the newest logs, far beyond what is counted', async () => {
    // 42 000 logs, every other one matching: the first page fills within the newest 2 000, half
    // of which match, so the total is half the project, marked as an estimate.
    const many = (await createProject(t, owner)).id;
    await t.database.db.execute(
      sql`insert into logs (project_id, level, message, "timestamp")
          select ${many}, 'info', case when i % 2 = 0 then 'Upstream timeout after ' || i || ' ms' else 'Request ' || i || ' served' end,
                 now() - make_interval(secs => i)
            from generate_series(1, 42000) as i`,
    );
    const first = (await list(many, 'search=timeout&per_page=50')).json();
    expect(first.data.map((l: { message: string }) => l.message)).toEqual(
      Array.from({ length: 50 }, (_, i) => `Upstream timeout after ${2 * (i + 1)} ms`),
    );
    expect(first.meta).toMatchObject({ total: 21_000, total_is_estimate: true });
    // The next page, by its cursor, goes on where the first ended, with the same estimate.
    const next = (await list(many, `search=timeout&per_page=50&cursor=${first.meta.next_cursor}`)).json();
    expect(next.data[0].message).toBe('Upstream timeout after 102 ms');
    expect(next.meta).toMatchObject({ total: 21_000, total_is_estimate: true });
  }, 120_000);

  it('pages a word too rare for a read of the newest logs from the newest slice of time, every match once', async () => {
    // 60 000 logs a second apart, one in 400 holding "deadlock": 0.25 %, too rare for the walk
    // (0.5 %), common enough that the newest 40 000 logs hold a page. The first page comes from
    // that slice, exact; its total is the slice's share scaled to the project, marked estimated.
    const sliced = (await createProject(t, owner)).id;
    await t.database.db.execute(
      sql`insert into logs (project_id, level, message, "timestamp")
          select ${sliced}, case when i % 3 = 0 then 'error' else 'info' end,
                 case when i % 400 = 7 then 'Deadlock detected on invoice ' || i else 'Request ' || i || ' served' end,
                 now() - make_interval(secs => i)
            from generate_series(1, 60000) as i`,
    );
    await t.database.db.execute(sql`analyze logs`);
    const wanted = Array.from({ length: 150 }, (_, k) => `Deadlock detected on invoice ${7 + 400 * k}`);
    const messages = (rows: { message: string }[]) => rows.map((l) => l.message);
    // The slice, given the share (the list takes it from the planner, which the other tests'
    // logs sway): the newest 50 matches, exact, and the total estimated from the slice.
    const search = { search: 'deadlock' };
    const page = await slicedPage(t.database.db, sliced, search, 50, 0.0025, { listRows: 60_000, scope: { wideProject: false } });
    expect(messages(page!.rows)).toEqual(wanted.slice(0, 50));
    expect(page!.estimated).toBe(true);
    expect(page!.total).toBeGreaterThanOrEqual(100);
    expect(page!.total).toBeLessThanOrEqual(200);
    // A share seen too high: the first slice comes short, and in a list long enough that fetching
    // the older matches would cost more, a second one sized by what it found fills the page.
    const resized = await slicedPage(t.database.db, sliced, search, 50, 0.05, { listRows: 6_000_000, scope: { wideProject: false } });
    expect(messages(resized!.rows)).toEqual(wanted.slice(0, 50));
    expect(resized!.estimated).toBe(true);
    // The same in this list of 60 000: the older matches are fetched instead, and counted.
    expect(await slicedPage(t.database.db, sliced, search, 50, 0.05, { listRows: 60_000, scope: { wideProject: false } })).toMatchObject({
      rows: wanted.slice(0, 50).map((message) => expect.objectContaining({ message })),
      total: 150,
      estimated: false,
    });
    // Where a read of the newest logs in order found the word in 0.25 % of them, that share sizes
    // the first slice, which fills the page: none of the older matches is fetched.
    const walkedFirst = await slicedPage(t.database.db, sliced, search, 50, 0.05, { listRows: 60_000, scope: { wideProject: false }, newest: 0.0025 });
    expect(messages(walkedFirst!.rows)).toEqual(wanted.slice(0, 50));
    expect(walkedFirst!.estimated).toBe(true);
    expect(walkedFirst!.total).toBeGreaterThanOrEqual(100);
    expect(walkedFirst!.total).toBeLessThanOrEqual(200);
    // A share the planner could not tell (its floor): a probe of the newest 10 000 logs, here enough.
    const probed = await slicedPage(t.database.db, sliced, search, 20, 0.0001, { listRows: 60_000, scope: { wideProject: false } });
    expect(messages(probed!.rows)).toEqual(wanted.slice(0, 20));
    expect(probed!.estimated).toBe(true);
    // Sized by the errors alone with a level: one match in three is an error.
    const errors = wanted.filter((m) => Number(m.split(' ').at(-1)) % 3 === 0);
    const byLevel = await slicedPage(t.database.db, sliced, { ...search, level: 'error' }, 20, 0.0025, { listRows: 20_000, scope: { wideProject: false } });
    expect(messages(byLevel!.rows)).toEqual(errors.slice(0, 20));
    // Past the newest matches, a page the slices cannot fill is completed from the older logs, counted exactly.
    const all = await slicedPage(t.database.db, sliced, search, 200, 0.01, { listRows: 60_000, scope: { wideProject: true } });
    expect(all).toMatchObject({ total: 150, estimated: false });
    expect(messages(all!.rows)).toEqual(wanted);
    // A project holding most logs is checked on the rows the trigram index finds: the same answer.
    for (const wideProject of [true, false]) {
      const whole = await indexedPage(t.database.db, sliced, { ...search, wideProject }, 200, 0);
      expect(messages(whole.rows)).toEqual(wanted);
      expect(whole.matched).toBe(150);
    }
    // A slice's text is hidden from the planner, which then reads the slice through the time index
    // (and-ed with the trigram index on a big day: a BitmapAnd). With the text itself, on a
    // 4-million-log day, it took the word for rarer than it is and checked the time of every match
    // of the day on its row (the bench's growth phase measures that day; this list is too small
    // to tell the two apart).
    const sliceIndexes = () =>
      withTransaction(t.database.db, async (tx) => {
        await tx.execute(sql`select set_config('enable_indexscan', 'off', true), set_config('enable_seqscan', 'off', true)`);
        const condition = where(sliced, { search: 'deadlock', from: new Date(Date.now() - 10_000_000), slice: true });
        const [row] = await queryRows<{ 'QUERY PLAN': unknown }>(tx, sql`explain (format json) select id from logs where ${condition}`);
        const plan = typeof row!['QUERY PLAN'] === 'string' ? row!['QUERY PLAN'] : JSON.stringify(row!['QUERY PLAN']);
        const names = [...plan.matchAll(/"Index Name":\s*"(\w+)"/g)].map((m) => m[1]!.replace(/^logs_p\d+_/, ''));
        return new Set(names.filter((n) => !n.startsWith('logs_') && n !== 'pkey'));
      });
    expect(await sliceIndexes()).toContain('project_id_timestamp_id_idx');
    // A wide project's search reads only the days it has logs in (by the daily rollups): the same answer.
    const scope = await searchScope(t.database.db, sliced, 10 ** 12);
    expect(scope.wideProject).toBe(true);
    expect(scope.days!.from.getTime()).toBeLessThanOrEqual(Date.now() - 60_000_000);
    // Through the end of tomorrow at least, for a log stored after the rollups were read.
    expect(scope.days!.to.getTime()).toBeGreaterThanOrEqual((Math.floor(Date.now() / 86_400_000) + 2) * 86_400_000);
    const withinDays = await indexedPage(t.database.db, sliced, { ...search, ...scope }, 200, 0);
    expect(messages(withinDays.rows)).toEqual(wanted);
    expect(withinDays.matched).toBe(150);
    expect(await isWideProject(t.database.db, 0)).toBe(false);
    // Worth it only in a long list, where a slice costs less than fetching every match: not in a
    // list this short, nor where the 300 matches of 150 000 or 250 000 logs cost less than a slice
    // of 50 000 or 83 000; from twelve pages of matches on (1 200 in a million logs), a slice;
    // a share below what the planner can tell is probed in a list of a million logs or more.
    expect(worthSlicing(50, 0.0025, 60_000)).toBe(false);
    expect(worthSlicing(50, 0.002, 150_000)).toBe(false);
    expect(worthSlicing(50, 0.0012, 250_000)).toBe(false);
    expect(worthSlicing(50, 0.0012, 4_000_000)).toBe(true);
    expect(worthSlicing(50, 0.0012, 2_000_000)).toBe(true);
    expect(worthSlicing(50, 0.0012, 1_000_000)).toBe(true);
    expect(worthSlicing(500, 0.0012, 1_000_000)).toBe(false);
    expect(worthSlicing(50, 0.004, 4_000_000)).toBe(true);
    expect(worthSlicing(50, 0.0003, 40_000_000)).toBe(true);
    expect(worthSlicing(50, 0.0003, 500_000)).toBe(false);
    // A share the last search found is known, however small: a word in 66 of 4 million logs is
    // fetched whole, not probed first; the planner's floor for the same word is probed.
    expect(worthSlicing(50, 0.0000165, 4_000_000, true)).toBe(false);
    expect(worthSlicing(50, 0.0000165, 4_000_000)).toBe(true);
    // The share a first page plans by: the one its last search found, else the planner's, which
    // says something of the word only above its floor. A word the planner met once in its sample
    // of 100 messages is priced at 1 % or more, however rare: the share counted is taken over it.
    expect(pageShare(0.0094, 0.00094)).toEqual({ share: 0.00094, known: true });
    expect(pageShare(0.0094, undefined)).toEqual({ share: 0.0094, known: true });
    expect(pageShare(0.0001, undefined)).toEqual({ share: 0.0001, known: false });
    expect(pageShare(0.0001, 0)).toEqual({ share: 0, known: true });
    // Searched again through the API, the word reads as the share its last search found; a share
    // learned wrong (a burst of the word since, or none) changes the path, never the page.
    const searches = t.database.customPlanDb;
    const key = searchShareKey(sliced, { search: 'deadlock' });
    const again = (await list(sliced, 'search=deadlock&per_page=50')).json();
    expect(messages(again.data)).toEqual(wanted.slice(0, 50));
    expect(learnedShare(searches, key, 60_000)).toBeCloseTo(again.meta.total / 60_000, 6);
    for (const wrong of [0, 0.00001, 0.0025, 0.3]) {
      learnShare(searches, key, wrong, 60_000);
      const page = (await list(sliced, 'search=deadlock&per_page=50')).json();
      expect(messages(page.data)).toEqual(wanted.slice(0, 50));
      expect(page.meta.total).toBeGreaterThanOrEqual(50);
      learnShare(searches, key, wrong, 60_000);
      expect((await walk(sliced, 'deadlock', 50)).messages).toEqual(wanted);
    }
    // A share learned over a list that has grown by more than a fiftieth since (a burst, whose logs
    // may hold the word far more often) is not taken: the planner's plans the page.
    learnShare(searches, key, 0.001, 1_000_000);
    expect(learnedShare(searches, key, 1_000_000)).toBe(0.001);
    expect(learnedShare(searches, key, 1_020_000)).toBe(0.001);
    expect(learnedShare(searches, key, 1_020_001)).toBeUndefined();
    learnShare(searches, key, 0.001, 20_000);
    expect(learnedShare(searches, key, 21_000)).toBe(0.001);
    expect(learnedShare(searches, key, 21_001)).toBeUndefined();
    // A share is kept through a reader's pause of minutes (as long as the pools keep an idle
    // connection), then planned anew.
    const learnedAt = Date.now();
    learnShare(searches, key, 0.001, 20_000);
    const clock = vi.spyOn(Date, 'now');
    try {
      clock.mockReturnValue(learnedAt + LEARNED_SHARE_MS - 1_000);
      expect(learnedShare(searches, key, 20_000)).toBe(0.001);
      clock.mockReturnValue(learnedAt + LEARNED_SHARE_MS + 1);
      expect(learnedShare(searches, key, 20_000)).toBeUndefined();
    } finally {
      clock.mockRestore();
    }
    // Through the API, whichever way the list reads it: every match once, newest first.
    const first = (await list(sliced, 'search=deadlock&per_page=50')).json();
    expect(messages(first.data)).toEqual(wanted.slice(0, 50));
    expect((await walk(sliced, 'deadlock', 50)).messages).toEqual(wanted);
    // A list bounded in time learns its share under a key of its own, whatever its bounds, and
    // leaves the whole list's as it was; a share of its own learned wrong changes the path, never
    // the page.
    const boundedKey = searchShareKey(sliced, { search: 'deadlock', from: new Date() });
    expect(boundedKey).not.toBe(key);
    expect(searchShareKey(sliced, { search: 'deadlock', to: new Date(0) })).toBe(boundedKey);
    expect(searchShareKey(sliced, { search: 'deadlock', from: new Date(0), to: new Date() })).toBe(boundedKey);
    learnShare(searches, key, 0.02, 60_000);
    const since = `from_date=${encodeURIComponent(new Date(Date.now() - 86_400_000).toISOString())}`;
    const lastDay = `search=deadlock&per_page=50&${since}`;
    const bounded = (await list(sliced, lastDay)).json();
    expect(messages(bounded.data)).toEqual(wanted.slice(0, 50));
    expect(bounded.meta.total).toBe(150);
    // Over the logs of the range, as the list without the search counts them (within the minutes
    // at its ends, which the two reads of the rollups may see a second apart).
    const rangeRows: number = (await list(sliced, `per_page=1&${since}`)).json().meta.total;
    const learnedBounded = learnedShare(searches, boundedKey, rangeRows);
    expect(Math.abs(learnedBounded! / (150 / rangeRows) - 1)).toBeLessThan(0.02);
    expect(learnedShare(searches, key, 60_000)).toBe(0.02);
    for (const wrong of [0, 0.02, 0.3]) {
      learnShare(searches, boundedKey, wrong, 60_000);
      expect(messages((await list(sliced, lastDay)).json().data)).toEqual(wanted.slice(0, 50));
    }
  }, 120_000);

  it('reads the older logs in order when the newest slice is short of a word the planner knows to be common', async () => {
    // The newest 30 000 logs are copies of one batch of 100 sent again and again, its timestamps
    // within a second of one minute, two of them holding "timeout"; before them a quarter of the
    // logs do. The slice of the newest minute finds two matches; a list of millions then reads the
    // older logs in order as far as the page needs, where fetching every older match would have
    // cost as many as the project holds.
    const copies = (await createProject(t, owner)).id;
    await t.database.db.execute(
      sql`insert into logs (project_id, level, message, "timestamp")
          select ${copies}::int, 'error', case when i in (5, 17) then 'Upstream timeout after ' || i || ' ms' else 'Request served' end,
                 date_trunc('minute', now()) - interval '30 seconds' + make_interval(secs => (i % 100) * 0.01)
            from generate_series(1, 30000) as i
          union all
          select ${copies}::int, 'error', case when i % 4 = 0 then 'Upstream timeout after ' || i || ' ms' else 'Request ' || i || ' served' end,
                 now() - interval '1 hour' - make_interval(secs => i)
            from generate_series(1, 20000) as i`,
    );
    const wanted = ['Upstream timeout after 17 ms', 'Upstream timeout after 5 ms', ...Array.from({ length: 48 }, (_, k) => `Upstream timeout after ${4 * (k + 1)} ms`)];
    const page = await slicedPage(t.database.db, copies, { search: 'timeout', level: 'error' }, 50, 0.25, { listRows: 5_000_000, scope: { wideProject: false } });
    expect(page!.rows.map((l) => l.message)).toEqual(wanted);
    // Estimated: the older matches were not all fetched to be counted.
    expect(page!.estimated).toBe(true);
    expect(page!.total).toBeGreaterThan(1_000_000);
    // A read of the newest logs in order that found the word this rare among them asks for a first
    // slice of more logs than the project holds: it is sized as the planner's share says, and that
    // share, not the one measured on the newest logs, still reads the older logs in order.
    const afterWalk = await slicedPage(t.database.db, copies, { search: 'timeout', level: 'error' }, 50, 0.25, {
      listRows: 5_000_000,
      scope: { wideProject: false },
      newest: 2 / 30_000,
    });
    expect(afterWalk!.rows.map((l) => l.message)).toEqual(wanted);
    expect(afterWalk!.estimated).toBe(true);
    // A share the planner could not tell says nothing of the older logs: they are fetched, and counted.
    const fetched = await slicedPage(t.database.db, copies, { search: 'timeout', level: 'error' }, 50, 0.0001, { listRows: 5_000_000, scope: { wideProject: false } });
    expect(fetched).toMatchObject({ total: 5_002, estimated: false });
    expect(fetched!.rows.map((l) => l.message)).toEqual(wanted);
    // Through the API, whichever way the list reads it: the same page.
    const first = (await list(copies, 'search=timeout&level=error&per_page=50')).json();
    expect(first.data.map((l: { message: string }) => l.message)).toEqual(wanted);
  }, 120_000);

  it('keeps the estimate of a list for a few seconds, by its key, until new statistics are gathered', async () => {
    const db = t.database.db;
    const kept = keptEstimate(db, 'estimate-key', eq(logs.projectId, mine));
    // The same key within the delay: the estimate kept, whatever the condition (the key names it).
    expect(keptEstimate(db, 'estimate-key', eq(logs.projectId, -1))).toBe(kept);
    expect(keptEstimate(db, 'another-key', eq(logs.projectId, mine))).not.toBe(kept);
    expect((await kept).rows).toBeGreaterThan(0);
    // The statistics keeper analysed a partition: what was kept came from the old statistics.
    forgetKeptEstimates();
    const planned = keptEstimate(db, 'estimate-key', eq(logs.projectId, -1));
    expect(planned).not.toBe(kept);
    expect((await planned).rows).toBeLessThan((await kept).rows);
    expect(keptEstimate(db, 'estimate-key', eq(logs.projectId, mine))).toBe(planned);
  });

  it('combines a search shorter than a trigram with a level', async () => {
    const response = await list(mine, 'search=ms&level=info&per_page=500');
    expect(response.json().data.map((l: { message: string }) => l.message)).toEqual(
      matching('ms').slice(0, 500),
    );
  });
});
