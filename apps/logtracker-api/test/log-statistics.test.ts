import { sql } from 'drizzle-orm';
import { createDatabase, queryRows } from '@repo/db';
import { sampleValue } from '@repo/http/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANALYZE_MIN_ROWS, ANALYZE_SPACING_MS, createLogStatisticsService } from '../src/modules/maintenance/log-statistics.service.js';
import { logs } from '../src/db/schema/index.js';
import { migrationsFolder, schema } from '../src/db/index.js';
import { buildTestApp, createProject, createUser, type TestApp, type TestUser } from './helpers.js';

// The planner's statistics of the logs partitions follow a burst of ingest within seconds, with no
// manual ANALYZE (autovacuum would look a minute later).

let t: TestApp;
let owner: TestUser;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '1000000', RATE_LIMIT_INGEST: '1000000' });
  owner = await createUser(t);
});
afterAll(async () => {
  await t.close();
});

/** The daily partition that holds logs of this instant, with what the server knows of it. */
async function partitionOfNow() {
  // reltuples is what the last ANALYZE counted (-1: never analysed), written to the catalogue at once.
  const [row] = await queryRows<{ name: string; counted: number }>(
    t.database.db,
    sql`select c.relname as name, c.reltuples::int as counted
          from pg_class c join pg_inherits i on i.inhrelid = c.oid
         where i.inhparent = 'logs'::regclass
           and pg_get_expr(c.relpartbound, c.oid) like 'FOR VALUES FROM (''' || to_char(now() at time zone 'UTC', 'YYYY-MM-DD') || '%'`,
  );
  return row;
}

async function ingest(projectId: number, count: number) {
  for (let sent = 0; sent < count; sent += 1000) {
    const logs = Array.from({ length: Math.min(1000, count - sent) }, (_, i) => ({
      level: 'warning',
      message: `timeout gateway for request r${sent + i} after ${i % 97} ms on node-${i % 5}`,
    }));
    const res = await t.app.inject({ method: 'POST', url: `/api/projects/${projectId}/logs/batch`, headers: owner.headers, payload: { logs } });
    expect(res.statusCode, res.body).toBe(201);
  }
}

/** The search keys' merges the app's job has run (metrics). */
/** How many runs of a job of the app's have succeeded (its metrics). */
async function jobRuns(on: TestApp, job: string) {
  const res = await on.app.inject({ method: 'GET', url: '/metrics' });
  return sampleValue(res.body, 'job_runs_total', { job_name: job, outcome: 'success' }) ?? 0;
}

function merges(on: TestApp = t) {
  return jobRuns(on, 'log_search_merge');
}

/** The merges run, once none has run for over a second (none due nor under way). */
async function settledMerges(on: TestApp = t) {
  let count = await merges(on);
  for (let settled = false; !settled; ) {
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const now = await merges(on);
    settled = now === count;
    count = now;
  }
  return count;
}

async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describe('logs statistics after a burst', () => {
  it('analyses the partition a burst grew, on its own, within seconds; not again for a few more rows', async () => {
    const project = await createProject(t, owner);
    const before = await partitionOfNow();
    expect(before).toBeDefined();
    before!.counted = Math.max(before!.counted, 0);
    await ingest(project.id, 8_000);
    // Waited for is what the analysis gives: the statistics know the project, its share of the
    // partition estimated from them. (The row count alone can grow without it: a VACUUM, which
    // autovacuum may run after many inserts, counts the rows but gathers no statistics, and a
    // project unknown to them is estimated at 0.5 % of the rows.)
    const after = await waitFor(async () => {
      const p = await partitionOfNow();
      if (!p || p.counted < before!.counted + ANALYZE_MIN_ROWS) return undefined;
      const [estimate] = await queryRows<Record<string, string>>(
        t.database.db,
        sql`explain select 1 from ${sql.identifier(p.name)} where project_id = ${project.id}`,
      );
      const rows = Number(/rows=(\d+)/.exec(Object.values(estimate ?? {})[0] ?? '')?.[1]);
      return rows > 2_000 ? p : undefined;
    });
    expect(after.name).toBe(before!.name);
    // Its pending list merged (by the analysis, or for the logs stored after it, a second after
    // the last batch): nothing is left for searches to read.
    await settledMerges();
    const [pending] = await queryRows<{ pages: number | string }>(
      t.database.db,
      sql`select sum(gin_clean_pending_list(x.indexrelid)) as pages from pg_index x
           join pg_class i on i.oid = x.indexrelid join pg_am a on a.oid = i.relam
          where x.indrelid = ${after.name}::regclass and a.amname = 'gin'`,
    );
    expect(Number(pending?.pages)).toBe(0);
    // After the analysis, the keys common in the project's logs were found: the words every one of
    // the burst's messages holds are among them, and a search of them keeps all its keys.
    await waitFor(async () => ((await jobRuns(t, 'log_search_common_keys')) >= 1 ? true : undefined));
    const [common] = await queryRows<{ gateway: boolean; rare: number; all: number }>(
      t.database.db,
      sql`select log_search_query_keys(${project.id}::int, 'timeout gateway') <@ array(select key from log_search_common_keys where project_id = ${project.id}) as gateway,
                 cardinality(log_search_rare_query_keys(${project.id}::int, 'gateway for request r4321')) as rare,
                 cardinality(log_search_query_keys(${project.id}::int, 'gateway for request r4321')) as all`,
    );
    expect(common?.gateway).toBe(true);
    // One request's id: its search looks up the keys of "r4321" alone (a few of the 8 000 hold them).
    expect(Number(common?.rare)).toBeGreaterThan(0);
    expect(Number(common?.rare)).toBeLessThanOrEqual(3);
    expect(Number(common?.all)).toBeGreaterThan(8);

    // A few hundred more rows are below the minimum of new rows: nothing to do.
    await ingest(project.id, 500);
    const statistics = createLogStatisticsService({ db: t.database.db });
    expect(await statistics.refresh()).toEqual({ analysed: [] });
  });
});

describe('logs statistics during sustained ingest', () => {
  // An app of its own, which no test ingests into through the API: its statistics keeper, armed by
  // ingest, never analyses the partition this test watches (the shared app's keeper, armed by the
  // tests before, could check again up to 11 s after their last batch, and analyse it first).
  let quiet: TestApp;
  beforeAll(async () => {
    quiet = await buildTestApp();
  });
  afterAll(async () => {
    await quiet.close();
  });

  it('analyses a partition again only once the spacing since its last analysis has passed', async () => {
    expect(ANALYZE_SPACING_MS).toBeGreaterThan(0);
    const db = quiet.database.db;
    const project = await createProject(quiet, await createUser(quiet));
    // A day of its own, written to directly: the app's checks (armed by ingest through the API)
    // are not involved, and autovacuum, which would analyse it too, is off for it.
    const day = new Date(Date.now() - 40 * 86_400_000);
    await db.execute(sql`select logs_ensure_partitions(${day.toISOString().slice(0, 10)}::date, ${day.toISOString().slice(0, 10)}::date)`);
    const [partition] = await queryRows<{ name: string }>(
      db,
      sql`select c.relname as name from pg_class c join pg_inherits i on i.inhrelid = c.oid
           where i.inhparent = 'logs'::regclass and c.relname = ${`logs_p${day.toISOString().slice(0, 10).replaceAll('-', '')}`}`,
    );
    expect(partition).toBeDefined();
    const name = partition!.name;
    if (process.env.TEST_DATABASE_URL) {
      await db.execute(sql`alter table ${sql.identifier(name)} set (autovacuum_enabled = false)`);
    }
    const write = (count: number) =>
      db.insert(logs).values(
        Array.from({ length: count }, (_, i) => ({ projectId: project.id, level: 'info' as const, message: `job ${i} done`, timestamp: day })),
      );
    const counted = async () =>
      Number((await queryRows<{ n: number }>(db, sql`select reltuples::int as n from pg_class where relname = ${name}`))[0]?.n);

    const statistics = createLogStatisticsService({ db: db, spacingMs: 60_000 });
    await write(ANALYZE_MIN_ROWS + 1_000);
    // Once the server's counts show the rows (a writing connection reports them within seconds).
    await waitFor(async () => ((await statistics.refresh()).analysed.includes(name) ? true : undefined));
    expect(await counted()).toBe(ANALYZE_MIN_ROWS + 1_000);

    // As many again: stale, but analysed less than the spacing ago, so it waits, and says until when.
    await write(ANALYZE_MIN_ROWS + 1_000);
    const pass = await waitFor(async () => {
      const p = await statistics.refresh();
      return p.nextDueInMs !== undefined ? p : undefined;
    });
    expect(pass.analysed).not.toContain(name);
    expect(pass.nextDueInMs).toBeGreaterThan(0);
    expect(pass.nextDueInMs).toBeLessThanOrEqual(60_000);
    expect(await counted()).toBe(ANALYZE_MIN_ROWS + 1_000);

    // No spacing: due at once.
    const unspaced = createLogStatisticsService({ db: db, spacingMs: 0 });
    expect((await unspaced.refresh()).analysed).toContain(name);
    expect(await counted()).toBe(2 * (ANALYZE_MIN_ROWS + 1_000));
    await db.execute(sql`drop table ${sql.identifier(name)}`);
  });

  it("analyses a partition a new project's logs grew by less than a tenth, and not for as many of a project its statistics know", async () => {
    const db = quiet.database.db;
    const user = await createUser(quiet);
    const known = await createProject(quiet, user);
    const fresh = await createProject(quiet, user);
    // A day of its own, written to directly, autovacuum off for it (as above).
    const day = new Date(Date.now() - 41 * 86_400_000);
    const name = `logs_p${day.toISOString().slice(0, 10).replaceAll('-', '')}`;
    await db.execute(sql`select logs_ensure_partitions(${day.toISOString().slice(0, 10)}::date, ${day.toISOString().slice(0, 10)}::date)`);
    if (process.env.TEST_DATABASE_URL) await db.execute(sql`alter table ${sql.identifier(name)} set (autovacuum_enabled = false)`);
    const write = (projectId: number, count: number) =>
      db.insert(logs).values(Array.from({ length: count }, (_, i) => ({ projectId, level: 'info' as const, message: `job ${i} done`, timestamp: day })));
    /** Once the server's counts show `n` rows written since the last analysis. */
    const written = (n: number) =>
      waitFor(async () => {
        await db.execute(sql`do $$ begin perform pg_stat_force_next_flush(); exception when undefined_function then null; end $$`);
        const [row] = await queryRows<{ n: number }>(db, sql`select n_mod_since_analyze::int as n from pg_stat_user_tables where relname = ${name}`);
        return (row?.n ?? 0) >= n ? true : undefined;
      });
    const statistics = createLogStatisticsService({ db, spacingMs: 0, minRows: 200 });
    await write(known.id, 5_000);
    await waitFor(async () => ((await statistics.refresh()).analysed.includes(name) ? true : undefined));

    // 220 more of the known project: under a tenth of the partition, and of what it holds of that project.
    await write(known.id, 220);
    await written(220);
    expect((await statistics.refresh(new Map([[known.id, 220]]))).analysed).not.toContain(name);
    // 220 of a project the statistics know nothing of: together still under a tenth.
    await write(fresh.id, 220);
    await written(440);
    expect((await statistics.refresh(new Map([[known.id, 220]]))).analysed).not.toContain(name);
    expect((await statistics.refresh(new Map([[known.id, 220], [fresh.id, 220]]))).analysed).toContain(name);
    const [stats] = await queryRows<{ vals: string | null }>(
      db,
      sql`select most_common_vals::text as vals from pg_stats where tablename = ${name} and attname = 'project_id'`,
    );
    expect(stats?.vals).toContain(String(fresh.id));
    await db.execute(sql`drop table ${sql.identifier(name)}`);
  });

  it('keeps no statistics of the columns no plan reads, on every partition', async () => {
    const rows = await queryRows<{ relname: string; attname: string; target: number }>(
      t.database.db,
      sql`select c.relname, a.attname, coalesce(a.attstattarget, -1)::int as target
            from pg_attribute a join pg_class c on c.oid = a.attrelid
           where (c.oid = 'logs'::regclass or c.oid in (select inhrelid from pg_inherits where inhparent = 'logs'::regclass))
             and a.attname in ('context', 'received_at', 'message')`,
    );
    expect(rows.length).toBeGreaterThan(3);
    for (const row of rows) expect([row.relname, row.attname, row.target]).toEqual([row.relname, row.attname, row.attname === 'message' ? -1 : 0]);
  });
});

describe('the search index after ingest pauses', () => {
  it('holds nothing pending a second after the last batch, for searches to read', async () => {
    const project = await createProject(t, owner);
    // A merge the tests before armed may still be due or under way, and would count here without
    // having seen these logs: first, a second and more with none.
    const before = await settledMerges();
    // A few hundred logs: far below the pending list's limit, which inserts would merge at.
    await ingest(project.id, 300);
    await expect.poll(merges, { timeout: 10_000 }).toBeGreaterThan(before);
    const [pending] = await queryRows<{ pages: number | string | null }>(
      t.database.db,
      sql`select sum(gin_clean_pending_list(x.indexrelid)) as pages from pg_inherits i
           join pg_index x on x.indrelid = i.inhrelid
           join pg_class c on c.oid = x.indexrelid join pg_am a on a.oid = c.relam
          where i.inhparent = 'logs'::regclass and a.amname = 'gin'`,
    );
    expect(Number(pending?.pages ?? 0)).toBe(0);
    // The search finds them all, from the index proper.
    const found = await t.app.inject({ method: 'GET', url: `/api/projects/${project.id}/logs?search=gateway&per_page=1`, headers: owner.headers });
    expect(found.json().meta.total).toBe(300);
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('logs statistics beside autovacuum, on PostgreSQL', () => {
  // A backend that waits a second for a lock autovacuum holds cancels it, and the vacuum starts
  // over later: the keeper never waits that long.
  it('passes over a partition whose lock another holds, and tries it again shortly', async () => {
    const project = await createProject(t, owner);
    const day = new Date(Date.now() - 41 * 86_400_000);
    const date = day.toISOString().slice(0, 10);
    await t.database.db.execute(sql`select logs_ensure_partitions(${date}::date, ${date}::date)`);
    const name = `logs_p${date.replaceAll('-', '')}`;
    await t.database.db.execute(sql`alter table ${sql.identifier(name)} set (autovacuum_enabled = false)`);
    await t.database.db.insert(logs).values(
      Array.from({ length: ANALYZE_MIN_ROWS + 1_000 }, (_, i) => ({ projectId: project.id, level: 'info' as const, message: `job ${i} done`, timestamp: day })),
    );
    const statistics = createLogStatisticsService({ db: t.database.db, spacingMs: 0 });
    // What a vacuum holds: the partition's lock that ANALYZE needs, from another connection.
    const holder = await createDatabase({ url: t.database.url, schema, migrationsFolder, poolSize: 1 });
    try {
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      const holding = holder.db.transaction(async (tx) => {
        await tx.execute(sql`lock table ${sql.identifier(name)} in share update exclusive mode`);
        locked();
        await released;
      });
      await isLocked;
      const pass = await waitFor(async () => {
        const started = Date.now();
        const p = await statistics.refresh();
        expect(Date.now() - started).toBeLessThan(900);
        return p.nextDueInMs !== undefined ? p : undefined;
      });
      expect(pass.analysed).not.toContain(name);
      expect(pass.nextDueInMs).toBeLessThanOrEqual(2_000);
      release();
      await holding;
      expect((await statistics.refresh()).analysed).toContain(name);
    } finally {
      await holder.close();
      await t.database.db.execute(sql`drop table ${sql.identifier(name)}`);
    }
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('logs statistics after a burst on PostgreSQL', () => {
  // A server connection flushes its row counts to the statistics at most once a second; what it
  // wrote within a second of its last flush reaches them only once it has been idle ten seconds.
  it('analyses a burst whose counts reach the statistics ten seconds late', async () => {
    const project = await createProject(t, owner);
    const before = await partitionOfNow();
    const counted = Math.max(before!.counted, 0);
    // The app's analysis, not the server's own a minute later, is what this waits for.
    await t.database.db.execute(sql`alter table ${sql.identifier(before!.name)} set (autovacuum_enabled = false)`);
    // A writer of its own, kept open (closing would flush its counts at once): one row, flushed as
    // it goes idle, then the burst within the second, its counts held back for ten seconds.
    const writer = await createDatabase({ url: t.database.url, schema, migrationsFolder, poolSize: 1 });
    try {
      const row = (i: number) => ({ projectId: project.id, level: 'warning' as const, message: `disk full on node-${i % 5}`, timestamp: new Date() });
      await writer.db.insert(logs).values(row(0));
      await writer.db.insert(logs).values(Array.from({ length: 6_000 }, (_, i) => row(i)));
      // One stored batch arms the app's checks; the first, a second later, sees the partition
      // without the burst.
      const res = await t.app.inject({
        method: 'POST',
        url: `/api/projects/${project.id}/logs/batch`,
        headers: owner.headers,
        payload: { logs: [{ level: 'info', message: 'deploy done' }] },
      });
      expect(res.statusCode, res.body).toBe(201);
      const after = await waitFor(async () => {
        const p = await partitionOfNow();
        return p && p.counted >= counted + ANALYZE_MIN_ROWS ? p : undefined;
      });
      expect(after.name).toBe(before!.name);
    } finally {
      await writer.close();
    }
  });
});

describe('the rollups after ingest pauses, where maintenance runs', () => {
  // Maintenance scheduled hourly: its pass at start-up is waited for before the batches come, and
  // the next is an hour away. Lists and statistics read the rollups, one appended row per batch and
  // key until a pass merges them. The start-up pass runs in the background once the app is ready
  // (creating the days' partitions first): not waited for, its merge fell amid the batches on a
  // loaded server. The merge forced every 10 s while batches keep coming is an hour apart here:
  // counted from the app's start, it too fell amid the batches of a loaded test run.
  let m: TestApp;
  let user: TestUser;
  beforeAll(async () => {
    m = await buildTestApp(
      { RATE_LIMIT_AUTHENTICATED: '1000000', RATE_LIMIT_INGEST: '1000000', MAINTENANCE_INTERVAL_SECONDS: '3600' },
      { logStatisticsTiming: { mergeEveryMs: 3_600_000 } },
    );
    user = await createUser(m);
    await waitFor(async () => ((await jobRuns(m, 'maintenance')) >= 1 ? true : undefined));
  });
  afterAll(async () => {
    await m.close();
  });

  const freshRows = async (projectId: number) => {
    const [row] = await queryRows<{ n: number | string }>(
      m.database.db,
      sql`select (select count(*) from log_level_counts where project_id = ${projectId} and not compacted)
               + (select count(*) from log_source_counts where project_id = ${projectId} and not compacted) as n`,
    );
    return Number(row?.n);
  };

  it('merges the rows a burst appended, a second or so after its last batch, with the counts kept', async () => {
    const project = await createProject(m, user);
    // Ten minutes ago: every bucket of the batches is closed, as a backfill's or a burst's soon are.
    const at = new Date(Date.now() - 600_000).toISOString();
    for (let batch = 0; batch < 20; batch++) {
      const logs = Array.from({ length: 50 }, (_, i) => ({ level: i % 2 ? 'error' : 'info', message: `worker ${batch} step ${i}`, source: `node-${i % 3}`, timestamp: at }));
      const res = await m.app.inject({ method: 'POST', url: `/api/projects/${project.id}/logs/batch`, headers: user.headers, payload: { logs } });
      expect(res.statusCode, res.body).toBe(201);
    }
    // One row per batch, grain and key: 20 × 3 × (2 levels + 3 sources).
    expect(await freshRows(project.id)).toBe(300);
    await expect.poll(() => freshRows(project.id), { timeout: 10_000, interval: 250 }).toBe(0);
    const stats = await m.app.inject({ method: 'GET', url: `/api/projects/${project.id}/stats?time_range=1h`, headers: user.headers });
    expect(stats.json().data).toMatchObject({ total: 1_000, by_level: { error: 500, info: 500 } });
    const list = await m.app.inject({ method: 'GET', url: `/api/projects/${project.id}/logs?level=error&per_page=1`, headers: user.headers });
    expect(list.json().meta).toMatchObject({ total: 500 });
  });
});

describe('the search index during sustained ingest', () => {
  // A forced merge a second apart at most, and ingest of 500 logs a second counted as busy
  // enough to merge the lists itself (the app's are 10 s and 10 000 logs): half a 1 000-log batch,
  // so that a second holds enough of them even where the whole suite runs at once on two cores
  // (at 2 000, a slow second of batches was merged as a pause, and the busy test saw 2 merges more).
  let s: TestApp;
  let user: TestUser;
  beforeAll(async () => {
    s = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '1000000', RATE_LIMIT_INGEST: '1000000' }, { logStatisticsTiming: { mergeEveryMs: 1_000, selfMergingLogs: 500 } });
    user = await createUser(s);
  });
  afterAll(async () => {
    await s.close();
  });

  const mergesOf = () => merges(s);
  const settled = () => settledMerges(s);
  /** Batches of `size` logs for `ms`, `gapMs` apart; the logs sent. */
  async function ingestFor(projectId: number, ms: number, size: number, gapMs: number) {
    let sent = 0;
    for (const end = Date.now() + ms; Date.now() < end; ) {
      const logs = Array.from({ length: size }, (_, i) => ({ level: 'info', message: `request r${sent + i} served by gateway node-${i % 7}` }));
      const res = await s.app.inject({ method: 'POST', url: `/api/projects/${projectId}/logs/batch`, headers: user.headers, payload: { logs } });
      expect(res.statusCode, res.body).toBe(201);
      sent += size;
      if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
    }
    return sent;
  }

  it('merges the lists now and then under a trickle of logs', async () => {
    const project = await createProject(s, user);
    const before = await settled();
    const sent = await ingestFor(project.id, 3_500, 5, 150);
    expect(sent).toBeLessThan(500);
    // Checked during the trickle, before a pause could merge them.
    expect(await mergesOf()).toBeGreaterThan(before);
  });

  it('leaves them to the inserts while ingest is busy, and merges them once it pauses', async () => {
    const project = await createProject(s, user);
    const before = await settled();
    const sent = await ingestFor(project.id, 3_500, 1_000, 0);
    expect(sent).toBeGreaterThan(3 * 2_000);
    expect(await mergesOf()).toBe(before);
    await expect.poll(mergesOf, { timeout: 10_000 }).toBe(before + 1);
    const found = await s.app.inject({ method: 'GET', url: `/api/projects/${project.id}/logs?search=gateway&per_page=1`, headers: user.headers });
    expect(found.json().meta.total).toBe(sent);
  });
});
