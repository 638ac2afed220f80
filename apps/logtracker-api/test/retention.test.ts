import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '@repo/config';
import { arrayLiteral, createDatabase, queryRows } from '@repo/db';
import { initializedPgliteDir } from '@repo/db/testing';
import { builtCli, runNode, secondPass } from '@repo/db/testing-files';
import { asc, count, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { migrationsFolder, schema } from '../src/db/index.js';
import { logs, projects } from '../src/db/schema/index.js';
import { createRetentionJob, type JobLogger } from '../src/jobs/retention.js';
import { defaultPartition, detachEmptyPartition, dropDetached } from '../src/modules/retention/retention.repository.js';
import { expiryCutoff } from '../src/modules/retention/retention.service.js';
import { buildTestApp, createLogs, createProject, createUser, type TestApp, type TestUser } from './helpers.js';

const DAY = 24 * 60 * 60 * 1000;
const APP_DIR = fileURLToPath(new URL('..', import.meta.url));

let t: TestApp;
let owner: TestUser;

beforeAll(async () => {
  t = await buildTestApp();
  owner = await createUser(t);
});
afterAll(() => t.close());

/** Log lines written by the job, kept for assertions. */
function captureLogger() {
  const lines: { level: 'info' | 'error'; obj: object; msg?: string }[] = [];
  const logger: JobLogger = {
    info: (obj, msg) => lines.push({ level: 'info', obj, msg }),
    error: (obj, msg) => lines.push({ level: 'error', obj, msg }),
  };
  return { lines, logger };
}

function job(options: { batchSize?: number; pauseMs?: number; now?: () => Date } = {}) {
  const { lines, logger } = captureLogger();
  const retention = createRetentionJob({
    db: t.database.db,
    logger,
    batchSize: options.batchSize ?? 5000,
    pauseMs: options.pauseMs ?? 0,
    now: options.now,
  });
  return { retention, lines };
}

async function projectWithRetention(days: number) {
  const project = await createProject(t, owner);
  await t.database.db.update(projects).set({ retentionDays: days }).where(eq(projects.id, project.id));
  return project.id;
}

/** Logs `ages` ago (ms before `now`), with their age as the message. */
async function logsAged(projectId: number, ages: number[], now = Date.now()) {
  return createLogs(
    t,
    projectId,
    ages.map((age) => ({ message: `age ${age}`, timestamp: new Date(now - age) })),
  );
}

async function messagesOf(projectId: number) {
  const rows = await t.database.db
    .select({ message: logs.message })
    .from(logs)
    .where(eq(logs.projectId, projectId))
    .orderBy(asc(logs.timestamp));
  return rows.map((r) => r.message);
}

/** No daily partition touched: the expired logs of these tests sit in the default partition. */
const nothingElse = { partitionsEmptied: 0, partitionsDropped: 0 };

async function projectCount() {
  const [row] = await t.database.db.select({ n: count() }).from(projects);
  return row?.n ?? 0;
}

describe('retention job', () => {
  it("deletes each project's logs older than its own retention, and only those", async () => {
    const now = Date.now();
    const week = await projectWithRetention(7);
    const month = await projectWithRetention(30);
    const day = await projectWithRetention(1);
    await logsAged(week, [10 * DAY, 8 * DAY, 6 * DAY, DAY], now);
    await logsAged(month, [40 * DAY, 29 * DAY, 10 * DAY], now);
    await logsAged(day, [3 * DAY, 2 * DAY, 60 * 60_000], now);

    const { retention, lines } = job({ now: () => new Date(now) });
    const result = await retention.runOnce();

    expect(result).toEqual({ ...nothingElse, deleted: 5, projects: await projectCount(), batches: await projectCount() });
    expect(await messagesOf(week)).toEqual([`age ${6 * DAY}`, `age ${DAY}`]);
    expect(await messagesOf(month)).toEqual([`age ${29 * DAY}`, `age ${10 * DAY}`]);
    expect(await messagesOf(day)).toEqual([`age ${60 * 60_000}`]);
    // One line per project that lost logs, and a summary.
    expect(lines.filter((l) => l.msg === 'retention: expired logs deleted').map((l) => l.obj)).toEqual([
      expect.objectContaining({ projectId: week, deleted: 2 }),
      expect.objectContaining({ projectId: month, deleted: 1 }),
      expect.objectContaining({ projectId: day, deleted: 2 }),
    ]);
    expect(lines.at(-1)).toMatchObject({ msg: 'retention run finished', obj: { deleted: 5 } });
  });

  it('keeps the whole UTC day holding the cutoff, and deletes the days before it', async () => {
    const now = new Date('2026-03-10T12:00:00.000Z');
    const id = await projectWithRetention(3);
    await createLogs(t, id, [
      { message: 'day before the cutoff', timestamp: new Date('2026-03-06T23:59:59.999Z') },
      { message: 'first instant kept', timestamp: new Date('2026-03-07T00:00:00.000Z') },
      { message: 'over three days old, same day', timestamp: new Date('2026-03-07T11:00:00.000Z') },
    ]);

    expect(expiryCutoff(now, 3).toISOString()).toBe('2026-03-07T00:00:00.000Z');
    expect(expiryCutoff(new Date('2026-03-10T00:00:00.000Z'), 3).toISOString()).toBe('2026-03-07T00:00:00.000Z');
    expect(expiryCutoff(new Date('2026-03-10T23:59:59.999Z'), 3).toISOString()).toBe('2026-03-07T00:00:00.000Z');
    const result = await job({ now: () => now }).retention.runOnce();

    expect(result.deleted).toBe(1);
    expect(await messagesOf(id)).toEqual(['first instant kept', 'over three days old, same day']);
    // What the fixed clock kept has expired by the real one: out of the way of the counts below.
    await t.database.db.delete(projects).where(eq(projects.id, id));
  });

  it('deletes in batches of at most the batch size, oldest first, until none is left', async () => {
    const id = await projectWithRetention(30);
    await logsAged(id, [...Array.from({ length: 10 }, (_, i) => (31 + i) * DAY), DAY, 2 * DAY]);
    const before = await projectCount();

    const result = await job({ batchSize: 3 }).retention.runOnce();

    // 10 expired logs in batches of 3: 3 + 3 + 3 + 1, so four statements for this project and
    // one (finding nothing) for each other project.
    expect(result).toEqual({ ...nothingElse, deleted: 10, projects: before, batches: before - 1 + 4 });
    expect(await messagesOf(id)).toEqual([`age ${2 * DAY}`, `age ${DAY}`]);
  });

  it('runs no empty batch when the expired logs fill the last batch exactly', async () => {
    const id = await projectWithRetention(30);
    await logsAged(id, [31 * DAY, 32 * DAY, 33 * DAY, 34 * DAY]);
    const before = await projectCount();

    const result = await job({ batchSize: 2 }).retention.runOnce();

    expect(result).toEqual({ ...nothingElse, deleted: 4, projects: before, batches: before - 1 + 2 });
    expect(await messagesOf(id)).toEqual([]);
  });

  it('deletes a run of logs sharing one instant, longer than a batch, in one go', async () => {
    const id = await projectWithRetention(30);
    const instant = new Date(Date.now() - 40 * DAY);
    await createLogs(t, id, [
      ...Array.from({ length: 5 }, (_, i) => ({ message: `same instant ${i}`, timestamp: instant })),
      { message: 'later', timestamp: new Date(instant.getTime() + 1) },
      { message: 'kept', timestamp: new Date(Date.now() - DAY) },
    ]);
    const before = await projectCount();

    const result = await job({ batchSize: 2 }).retention.runOnce();

    // The five of one instant go together, then the last expired one.
    expect(result).toEqual({ ...nothingElse, deleted: 6, projects: before, batches: before - 1 + 2 });
    expect(await messagesOf(id)).toEqual(['kept']);
  });

  it('answers zero when nothing has expired, and touches nothing', async () => {
    const id = await projectWithRetention(30);
    await logsAged(id, [29 * DAY, DAY, 0]);

    const { retention, lines } = job();
    const result = await retention.runOnce();

    expect(result).toEqual({ ...nothingElse, deleted: 0, projects: await projectCount(), batches: await projectCount() });
    expect(await messagesOf(id)).toHaveLength(3);
    expect(lines.map((l) => l.msg)).toEqual(['retention run finished']);
  });

  it('lets ingestion through between its batches', async () => {
    const id = await projectWithRetention(1);
    await logsAged(id, Array.from({ length: 400 }, (_, i) => 2 * DAY + i));
    const order: string[] = [];

    const run = job({ batchSize: 20, pauseMs: 5 })
      .retention.runOnce()
      .then((r) => {
        order.push('retention');
        return r;
      });
    const post = t.app
      .inject({
        method: 'POST',
        url: `/api/projects/${id}/logs`,
        headers: owner.headers,
        payload: { level: 'info', message: 'during retention' },
      })
      .then((r) => {
        order.push('ingest');
        return r;
      });
    const [result, response] = await Promise.all([run, post]);

    expect(response.statusCode, response.body).toBe(201);
    expect(order).toEqual(['ingest', 'retention']);
    expect(result.deleted).toBe(400);
    expect(await messagesOf(id)).toEqual(['during retention']);
  });

  it('pauses after each batch at least twice as long as the batch took: it deletes at most a third of the time', async () => {
    const id = await projectWithRetention(1);
    await logsAged(id, Array.from({ length: 2000 }, (_, i) => 2 * DAY + i));
    // Each pause asked for, beside the work done since the previous pause ended (one batch).
    const pauses: { ms: number; workedMs: number }[] = [];
    let lastEnd: number | undefined;
    const sleep = async (ms: number) => {
      const asked = performance.now();
      if (lastEnd !== undefined) pauses.push({ ms, workedMs: asked - lastEnd });
      await new Promise((resolve) => setTimeout(resolve, ms));
      lastEnd = performance.now();
    };
    const { lines, logger } = captureLogger();
    const retention = createRetentionJob({ db: t.database.db, logger, batchSize: 200, pauseMs: 1, sleep });

    const result = await retention.runOnce();

    expect(result.deleted).toBe(2000);
    expect(lines.filter((l) => l.level === 'error')).toEqual([]);
    // Ten batches: a pause after each of the first nine, the tenth followed by the pause between
    // projects; every pause but the first is seen beside the batch before it.
    expect(pauses.length).toBeGreaterThanOrEqual(9);
    for (const { ms } of pauses) expect(ms).toBeGreaterThanOrEqual(1);
    // The batches are timed inside the intervals seen here; what lies outside them (the loop's own
    // steps, a busy machine's scheduling) is a millisecond or two each, against batches of several.
    // A fixed 1 ms pause would sum to a tenth of the work, a pause as long as the batch to about as much.
    const paused = pauses.reduce((sum, p) => sum + p.ms, 0);
    const worked = pauses.reduce((sum, p) => sum + p.workedMs, 0);
    expect(paused).toBeGreaterThanOrEqual(worked * 1.4);
  });

  it('joins a run in flight instead of starting a second one', async () => {
    const { retention } = job();
    const first = retention.runOnce();
    const second = retention.runOnce();
    expect(second).toBe(first);
    await first;
    expect(retention.runOnce()).not.toBe(first);
  });

  it('runs on its schedule until stopped, and stop waits for the run in flight', async () => {
    const id = await projectWithRetention(1);
    await logsAged(id, [2 * DAY]);
    const { retention } = job({ pauseMs: 0 });

    retention.start(20);
    await expect.poll(() => messagesOf(id), { timeout: 5000, interval: 20 }).toEqual([]);
    // A later run of the same schedule takes logs that expired since.
    await logsAged(id, [3 * DAY]);
    await expect.poll(() => messagesOf(id), { timeout: 5000, interval: 20 }).toEqual([]);

    await retention.stop();
    await logsAged(id, [4 * DAY]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await messagesOf(id)).toEqual([`age ${4 * DAY}`]);
  });

  it('reports a failed scheduled run and tries again at the next interval', async () => {
    // A database that is closed fails every statement.
    const broken = await buildTestApp();
    await broken.close();
    const { lines, logger } = captureLogger();
    const retention = createRetentionJob({ db: broken.database.db, logger, batchSize: 10, pauseMs: 0 });

    retention.start(20);
    await expect.poll(() => lines.filter((l) => l.level === 'error').length, { timeout: 5000, interval: 10 }).toBeGreaterThanOrEqual(2);
    await retention.stop();
    expect(lines[0]).toMatchObject({ level: 'error', msg: 'retention run failed; retrying at the next interval' });
  });
});

describe('retention by daily partition', () => {
  let iso: TestApp;
  let user: TestUser;
  const partitionsOf = async () =>
    (
      await queryRows<{ name: string }>(
        iso.database.db,
        sql`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
             where i.inhparent = 'logs'::regclass order by 1`,
      )
    ).map((r) => r.name);
  /** Which of these tables exist, partitions of logs or not. */
  const tablesOf = async (names: string[]) =>
    (
      await queryRows<{ name: string }>(
        iso.database.db,
        sql`select relname as name from pg_class where relkind in ('r', 'p') and relname = any(${arrayLiteral(names)}::text[]) order by 1`,
      )
    ).map((r) => r.name);
  const partitionOf = (daysAgo: number) => `logs_p${new Date(Date.now() - daysAgo * DAY).toISOString().slice(0, 10).replaceAll('-', '')}`;
  /** Noon, `daysAgo` UTC days before today. */
  const noon = (daysAgo: number) => {
    const d = new Date(Date.now() - daysAgo * DAY);
    return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), 12));
  };
  const rollupTotal = async (projectId: number) => {
    const [row] = await queryRows<{ levels: number; sources: number }>(
      iso.database.db,
      sql`select (select coalesce(sum(count), 0)::int from log_level_counts where project_id = ${projectId} and grain = 'hour') as levels,
                 (select coalesce(sum(count), 0)::int from log_source_counts where project_id = ${projectId} and grain = 'day') as sources`,
    );
    return row;
  };
  const messages = async (projectId: number) =>
    (await iso.database.db.select({ message: logs.message }).from(logs).where(eq(logs.projectId, projectId)).orderBy(asc(logs.timestamp))).map(
      (r) => r.message,
    );
  const runJob = () =>
    createRetentionJob({ db: iso.database.db, logger: captureLogger().logger, batchSize: 1000, pauseMs: 0 }).runOnce();

  beforeAll(async () => {
    iso = await buildTestApp();
    user = await createUser(iso);
    // The daily partitions of six to three days ago, as a deployment that has kept them has.
    await queryRows(
      iso.database.db,
      sql`select logs_ensure_partitions((now() at time zone 'UTC')::date - 6, (now() at time zone 'UTC')::date - 3)`,
    );
  });
  afterAll(() => iso.close());

  it('empties a day none of whose logs is kept, deletes row by row where a neighbour keeps its own, and drops days expired for all', async () => {
    const short = await createProject(iso, user);
    const long = await createProject(iso, user);
    await iso.database.db.update(projects).set({ retentionDays: 2 }).where(eq(projects.id, short.id));
    await iso.database.db.update(projects).set({ retentionDays: 10 }).where(eq(projects.id, long.id));
    await createLogs(iso, short.id, [
      { message: 'short, 5 days, beside a kept log', timestamp: noon(5) },
      { message: 'short, 4 days, alone', timestamp: noon(4) },
      { message: 'short, 4 days, alone too', timestamp: noon(4) },
      { message: 'short, today', timestamp: new Date() },
    ]);
    await createLogs(iso, long.id, [
      { message: 'long, 5 days', timestamp: noon(5) },
      { message: 'long, today', timestamp: new Date() },
    ]);

    const first = await runJob();

    // Four days ago held only expired logs: emptied whole, but kept as a partition while the
    // long project may still log there. Five days ago keeps the long project's log.
    expect(first).toMatchObject({ deleted: 3, partitionsEmptied: 1, partitionsDropped: 0 });
    expect(await messages(short.id)).toEqual(['short, today']);
    expect(await messages(long.id)).toEqual(['long, 5 days', 'long, today']);
    expect(await partitionsOf()).toEqual(expect.arrayContaining([partitionOf(6), partitionOf(5), partitionOf(4)]));
    // The rollups lost exactly what went, by either way.
    expect(await rollupTotal(short.id)).toEqual({ levels: 1, sources: 1 });
    expect(await rollupTotal(long.id)).toEqual({ levels: 2, sources: 2 });

    await iso.database.db.update(projects).set({ retentionDays: 3 }).where(eq(projects.id, long.id));
    const second = await runJob();

    // Five days ago now holds expired logs only; days up to four days ago have expired for every
    // project: all three partitions go. Three days ago is still kept by the long project.
    expect(second).toMatchObject({ deleted: 1, partitionsEmptied: 1, partitionsDropped: 3 });
    expect(await messages(long.id)).toEqual(['long, today']);
    const left = await partitionsOf();
    expect(left).not.toContain(partitionOf(6));
    expect(left).not.toContain(partitionOf(5));
    expect(left).not.toContain(partitionOf(4));
    expect(left).toContain(partitionOf(3));
    expect(left).toContain('logs_default');
    // Detached, then dropped: no table of those days is left behind.
    expect(await tablesOf([partitionOf(6), partitionOf(5), partitionOf(4)])).toEqual([]);
    expect(await rollupTotal(long.id)).toEqual({ levels: 1, sources: 1 });

    // A log for a dropped day still has a home (the default partition), and goes at the next run.
    await createLogs(iso, long.id, [{ message: 'late, 5 days', timestamp: noon(5) }]);
    expect(await runJob()).toMatchObject({ deleted: 1, partitionsEmptied: 0, partitionsDropped: 0 });
    expect(await messages(long.id)).toEqual(['long, today']);
  });

  it('drops a day an earlier run detached and stopped before dropping', async () => {
    // Every project keeps three days: three days ago is kept, six days ago has expired for all.
    await iso.database.db.update(projects).set({ retentionDays: 3 });
    await queryRows(iso.database.db, sql`select logs_ensure_partitions((now() at time zone 'UTC')::date - 6, (now() at time zone 'UTC')::date - 6)`);
    await queryRows(iso.database.db, sql.raw(`alter table logs detach partition "${partitionOf(6)}"`));
    expect(await tablesOf([partitionOf(6)])).toEqual([partitionOf(6)]);

    const run = await runJob();

    expect(run.partitionsDropped).toBe(1);
    expect(await tablesOf([partitionOf(6)])).toEqual([]);
    expect(await partitionsOf()).toContain(partitionOf(3));
  });

  it('detaches a day only while it holds no log, in one statement', async () => {
    const project = await createProject(iso, user);
    await queryRows(iso.database.db, sql`select logs_ensure_partitions((now() at time zone 'UTC')::date - 8, (now() at time zone 'UTC')::date - 8)`);
    const from = new Date(noon(8).getTime() - 12 * 60 * 60 * 1000);
    const day = { name: partitionOf(8), from, to: new Date(from.getTime() + DAY) };
    const fallback = await defaultPartition(iso.database.db);
    // A late backfill landed there: the day stays.
    const [late] = await createLogs(iso, project.id, [{ message: 'late, 8 days', timestamp: noon(8) }]);
    expect(await detachEmptyPartition(iso.database.db, day, fallback, 5)).toBe(false);
    expect(await partitionsOf()).toContain(day.name);
    expect(await messages(project.id)).toEqual(['late, 8 days']);

    await iso.database.db.delete(logs).where(eq(logs.id, late!.id));
    expect(await detachEmptyPartition(iso.database.db, day, fallback, 5)).toBe(true);
    // Detached, a table of its own until dropped.
    expect(await partitionsOf()).not.toContain(day.name);
    expect(await tablesOf([day.name])).toEqual([day.name]);
    await dropDetached(iso.database.db, day.name);
    expect(await tablesOf([day.name])).toEqual([]);
  });

  it.runIf(process.env.TEST_DATABASE_URL)('leaves a day that holds logs without waiting on the logs table', async () => {
    const project = await createProject(iso, user);
    await queryRows(iso.database.db, sql`select logs_ensure_partitions((now() at time zone 'UTC')::date - 9, (now() at time zone 'UTC')::date - 9)`);
    const from = new Date(noon(9).getTime() - 12 * 60 * 60 * 1000);
    const day = { name: partitionOf(9), from, to: new Date(from.getTime() + DAY) };
    const [late] = await createLogs(iso, project.id, [{ message: 'late, 9 days', timestamp: noon(9) }]);
    const fallback = await defaultPartition(iso.database.db);
    const other = await createDatabase({ url: iso.database.url, schema, migrationsFolder, poolSize: 1 });
    try {
      // An insert in flight holds the logs table: the check of the day needs no lock on it.
      await other.db.transaction(async (tx) => {
        await tx.execute(sql`lock table only logs in row exclusive mode`);
        expect(await detachEmptyPartition(iso.database.db, day, fallback, 200)).toBe(false);
      });
      expect(await partitionsOf()).toContain(day.name);
    } finally {
      await other.close();
    }
    await iso.database.db.delete(logs).where(eq(logs.id, late!.id));
    expect(await detachEmptyPartition(iso.database.db, day, fallback, 200)).toBe(true);
    await dropDetached(iso.database.db, day.name);
  });

  it.runIf(process.env.TEST_DATABASE_URL)('gives up on a busy table for this run instead of keeping ingestion waiting', async () => {
    const project = await createProject(iso, user);
    // Every project keeps one day: three days ago has expired for all of them.
    await iso.database.db.update(projects).set({ retentionDays: 1 });
    await createLogs(iso, project.id, [{ message: 'three days old', timestamp: noon(3) }]);
    const other = await createDatabase({ url: iso.database.url, schema, migrationsFolder, poolSize: 1 });
    try {
      // A long read holds the logs table (not its partitions): the drop may not wait for it.
      await other.db.transaction(async (tx) => {
        await tx.execute(sql`lock table only logs in access share mode`);
        const ingest = Date.now();
        const started = createRetentionJob({ db: iso.database.db, logger: captureLogger().logger, batchSize: 1000, pauseMs: 0 }).runOnce();
        // Ingestion goes on while the job waits on the lock.
        await createLogs(iso, project.id, [{ message: 'during retention' }]);
        expect(Date.now() - ingest).toBeLessThan(1000);
        const busy = await started;
        expect(busy).toMatchObject({ deleted: 1, partitionsEmptied: 1, partitionsDropped: 0 });
      });
      expect(await partitionsOf()).toContain(partitionOf(3));
      expect(await runJob()).toMatchObject({ partitionsDropped: 1 });
      expect(await partitionsOf()).not.toContain(partitionOf(3));
      expect(await messages(project.id)).toEqual(['during retention']);
    } finally {
      await other.close();
    }
  });
});

describe('retention configuration', () => {
  const base = { NODE_ENV: 'development', DATA_DIR: 'memory://' };

  it('runs hourly in 5000-row batches by default, and not at all in tests unless asked', () => {
    expect(loadConfig(base).retention).toEqual({ intervalMinutes: 60, batchSize: 5000, pauseMs: 50 });
    expect(loadConfig({ ...base, NODE_ENV: 'test' }).retention.intervalMinutes).toBe(0);
    expect(loadConfig({ ...base, NODE_ENV: 'test', RETENTION_INTERVAL_MINUTES: '5' }).retention.intervalMinutes).toBe(5);
  });

  it('takes 0 to turn the schedule off, and refuses nonsense', () => {
    expect(loadConfig({ ...base, RETENTION_INTERVAL_MINUTES: '0', RETENTION_BATCH_SIZE: '250' }).retention).toMatchObject({
      intervalMinutes: 0,
      batchSize: 250,
    });
    for (const bad of [{ RETENTION_INTERVAL_MINUTES: '-1' }, { RETENTION_INTERVAL_MINUTES: 'hourly' }, { RETENTION_BATCH_SIZE: '0' }]) {
      expect(() => loadConfig({ ...base, ...bad })).toThrow(ConfigError);
    }
  });

  it('runs with the app when enabled (first run at start), and not when disabled', async () => {
    const started = await appLogs({ RETENTION_INTERVAL_MINUTES: '60' });
    await expect.poll(() => started.messages().includes('retention run finished'), { timeout: 5000, interval: 20 }).toBe(true);
    await started.close();

    const disabled = await appLogs({ RETENTION_INTERVAL_MINUTES: '0' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(disabled.messages()).not.toContain('retention run finished');
    await disabled.close();
  });
});

/** A test app whose log lines are kept. */
async function appLogs(env: Record<string, string>) {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  const app = await buildTestApp(env, { logger: { level: 'info', stream } });
  return {
    messages: () =>
      chunks
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((line) => (JSON.parse(line) as { msg?: string }).msg),
    close: () => app.close(),
  };
}

describe.skipIf(secondPass)('retention CLI (node dist/cli/retention.js), on a PGlite data directory whatever the pass', () => {
  const cli = join(APP_DIR, 'dist', 'cli', 'retention.js');
  let dataDir: string;

  beforeAll(async () => {
    await builtCli(APP_DIR, 'retention');
    dataDir = await initializedPgliteDir('retention-cli-');
  }, 120_000);
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('deletes expired logs from a PGlite data directory, prints a JSON summary and exits 0', async () => {
    const env = { NODE_ENV: 'development', DATA_DIR: dataDir, LOG_LEVEL: 'info' };
    const seeding = await openDatabase(loadConfig(env));
    let projectId: number;
    try {
      const [project] = await seeding.db.insert(projects).values({ name: 'cli', retentionDays: 2 }).returning();
      if (!project) throw new Error('no project');
      projectId = project.id;
      const now = Date.now();
      await seeding.db.insert(logs).values(
        [5, 4, 3, 1, 0].map((days) => ({
          projectId: project.id,
          level: 'info' as const,
          message: `${days} days old`,
          timestamp: new Date(now - days * DAY - 1000),
        })),
      );
    } finally {
      await seeding.close();
    }

    const result = await runNode(APP_DIR, [cli], { ...env, RETENTION_BATCH_SIZE: '2' });

    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const summary = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
    expect(summary).toMatchObject({ job: 'retention', ok: true, deleted: 3, projects: 1, batches: 2 });
    expect(typeof summary.duration_ms).toBe('number');
    // Progress goes to stderr as JSON lines, never mixed into the summary.
    const logLines = result.stderr.trim().split('\n').map((l) => JSON.parse(l) as { msg: string });
    expect(logLines.map((l) => l.msg)).toContain('retention run finished');

    const reopened = await openDatabase(loadConfig(env));
    try {
      const left = await reopened.db.select({ message: logs.message }).from(logs).where(eq(logs.projectId, projectId)).orderBy(asc(logs.timestamp));
      expect(left.map((r) => r.message)).toEqual(['1 days old', '0 days old']);
    } finally {
      await reopened.close();
    }
  });

  it('exits 1 with a JSON error line when it cannot run', async () => {
    const result = await runNode(APP_DIR, [cli], { NODE_ENV: 'development', DATA_DIR: dataDir, RETENTION_BATCH_SIZE: '0' });

    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    const error = JSON.parse(result.stderr.trim()) as { job: string; ok: boolean; error: string };
    expect(error).toMatchObject({ job: 'retention', ok: false });
    expect(error.error).toContain('RETENTION_BATCH_SIZE');
  });

  it('is the package script `retention`', () => {
    const pkg = JSON.parse(readFileSync(join(APP_DIR, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.retention).toBe('node dist/cli/retention.js');
  });
});
