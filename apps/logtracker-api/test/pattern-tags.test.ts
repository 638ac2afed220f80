import { count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logPatterns, patterns, projects } from '../src/db/schema/index.js';
import * as patternsRepo from '../src/modules/patterns/patterns.repository.js';
import { createRetentionJob } from '../src/jobs/retention.js';
import { buildTestApp, createLogs, createProject, createUser, type TestApp, type TestUser } from './helpers.js';

const DAY = 24 * 60 * 60 * 1000;

/**
 * The pattern of each mined log lives beside it (log_patterns): these tags must go wherever their
 * logs go, or counts and filters would keep logs that no longer exist.
 */
let t: TestApp;
let owner: TestUser;

beforeAll(async () => {
  t = await buildTestApp();
  owner = await createUser(t);
});
afterAll(() => t.close());

async function tagsOf(projectId: number) {
  const [row] = await t.database.db.select({ n: count() }).from(logPatterns).where(eq(logPatterns.projectId, projectId));
  return row?.n ?? 0;
}

async function analysedProject(ages: number[]) {
  const project = await createProject(t, owner);
  const now = Date.now();
  await createLogs(
    t,
    project.id,
    ages.map((age, i) => ({ message: `job ${i} finished in ${age % 997} ms`, timestamp: new Date(now - age) })),
  );
  const response = await t.app.inject({
    method: 'POST',
    url: `/api/projects/${project.id}/analyze`,
    headers: owner.headers,
    payload: { time_range: '30d' },
  });
  expect(response.statusCode, response.body).toBe(201);
  expect(await tagsOf(project.id)).toBe(ages.length);
  return project.id;
}

describe('pattern tags follow their logs', () => {
  it('leave with the logs retention deletes, and stay with the logs it keeps', async () => {
    const projectId = await analysedProject([10 * DAY, 8 * DAY, DAY, 60_000]);
    await t.database.db.update(projects).set({ retentionDays: 7 }).where(eq(projects.id, projectId));
    const retention = createRetentionJob({
      db: t.database.db,
      logger: { info: () => undefined, error: () => undefined },
      batchSize: 5000,
      pauseMs: 0,
    });
    await retention.runOnce();
    expect(await tagsOf(projectId)).toBe(2);
    // The pattern's count follows its tags: the two expired logs no longer count.
    const [pattern] = await t.database.db.select().from(patterns).where(eq(patterns.projectId, projectId));
    expect(pattern?.count).toBe(2);

    const list = (
      await t.app.inject({ method: 'GET', url: `/api/projects/${projectId}/logs`, headers: owner.headers })
    ).json();
    expect(list.data).toHaveLength(2);
    expect(list.data.every((l: { pattern_id: number | null }) => typeof l.pattern_id === 'number')).toBe(true);
  });

  it('leave with a deleted project', async () => {
    const projectId = await analysedProject([DAY, 60_000, 1_000]);
    const response = await t.app.inject({ method: 'DELETE', url: `/api/projects/${projectId}`, headers: owner.headers });
    expect(response.statusCode, response.body).toBeLessThan(300);
    expect(await tagsOf(projectId)).toBe(0);
  });

  it('are written once however often a range is analysed, and new logs get theirs', async () => {
    const projectId = await analysedProject([DAY, 60_000]);
    await createLogs(t, projectId, [{ message: 'job 9 finished in 12 ms', timestamp: new Date() }]);
    const again = await t.app.inject({
      method: 'POST',
      url: `/api/projects/${projectId}/analyze`,
      headers: owner.headers,
      payload: { time_range: '30d' },
    });
    expect(again.statusCode, again.body).toBe(201);
    expect(again.json().data.result.mined.logs).toBe(1);
    expect(await tagsOf(projectId)).toBe(3);
  });

  it('keep the tag another run wrote first, and count each log once', async () => {
    const projectId = await analysedProject([60_000]);
    const [pattern] = await t.database.db.select().from(patterns).where(eq(patterns.projectId, projectId));
    const [tagged] = await t.database.db.select().from(logPatterns).where(eq(logPatterns.projectId, projectId));
    if (!pattern || !tagged) throw new Error('the analysis tagged nothing');
    await createLogs(t, projectId, [{ message: 'job 7 finished in 3 ms', timestamp: new Date() }]);
    const [fresh] = await patternsRepo.logsToMine(t.database.db, projectId, new Date(Date.now() - DAY), new Date(Date.now() + 1_000), undefined, 10)
      .then((rows) => rows.filter((r) => r.message !== null));
    if (!fresh || fresh.message === null) throw new Error('the new log is not offered for mining');
    const log = (id: number | string, ts: string) => ({ id, ts, level: 'info' as const, message: '' });
    // A run that read both logs before another tagged the first: only the second is written.
    const written = await patternsRepo.tagLogs(t.database.db, projectId, [
      { log: log(tagged.logId, tagged.timestamp.toISOString()), patternId: pattern.id },
      { log: log(fresh.id, fresh.ts), patternId: pattern.id },
    ]);
    expect(written.map((w) => String(w.log.id))).toEqual([String(fresh.id)]);
    expect(await tagsOf(projectId)).toBe(2);
  });

  it('hand their counts, levels and sightings to the pattern that absorbs theirs', async () => {
    const project = await createProject(t, owner);
    const ids = await patternsRepo.upsertPatterns(t.database.db, project.id, [
      { clusterId: 1, template: 'disk <*> full', sample: 'disk sda full' },
      { clusterId: 2, template: 'disk <*> nearly full', sample: 'disk sdb nearly full' },
    ]);
    const [kept, gone] = [ids.get(1), ids.get(2)] as [number, number];
    await patternsRepo.addPatternStats(t.database.db, project.id, [
      { patternId: kept, count: 3, levels: ['warning'], firstSeen: '2026-03-01T10:00:00.000000Z', lastSeen: '2026-03-02T10:00:00.000000Z' },
      { patternId: gone, count: 2, levels: ['error', 'warning'], firstSeen: '2026-02-27T10:00:00.000000Z', lastSeen: '2026-03-01T12:00:00.000000Z' },
    ]);
    await patternsRepo.mergePattern(t.database.db, project.id, gone, kept);
    const rows = await t.database.db.select().from(patterns).where(eq(patterns.projectId, project.id));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id: kept, count: 5, levels: ['error', 'warning'] });
    expect(rows[0]?.firstSeen?.toISOString()).toBe('2026-02-27T10:00:00.000Z');
    expect(rows[0]?.lastSeen?.toISOString()).toBe('2026-03-02T10:00:00.000Z');
  });
});
