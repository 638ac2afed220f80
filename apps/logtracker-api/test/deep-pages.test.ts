import { queryRows } from '@repo/db';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projects } from '../src/db/schema/index.js';
import { pageDays } from '../src/modules/logs/logs.counts.repository.js';
import { ensureDailyPartitions } from '../src/modules/maintenance/maintenance.repository.js';
import { buildTestApp, createLogs, createProject, createUser, type LogBody, type TestApp, type TestUser } from './helpers.js';

// A page by number deep in a list (past the 500th log) reads the days it lies in alone, found from
// the daily rollups (pageDays), the newer days' logs skipped by their count: every page must hold
// the same logs as the whole list read in order, across the days' edges too.

const DAY_MS = 86_400_000;
const dayStart = (daysAgo: number) => Math.floor(Date.now() / DAY_MS - daysAgo) * DAY_MS;

let t: TestApp;
let owner: TestUser;
let projectId: number;
/** Logs per day, from three days ago to today, and one stamped tomorrow (a clock ahead). */
const PER_DAY = [700, 500, 600, 400];

beforeAll(async () => {
  t = await buildTestApp();
  owner = await createUser(t);
  projectId = (await createProject(t, owner)).id;
  const neighbour = (await createProject(t, owner)).id;
  await ensureDailyPartitions(t.database.db, new Date(dayStart(3)));
  await ensureDailyPartitions(t.database.db, new Date());
  const entries = PER_DAY.flatMap((count, i) =>
    Array.from({ length: count }, (_, k) => ({
      message: `day ${i} log ${k}`,
      level: k % 2 === 0 ? ('error' as const) : ('info' as const),
      // Spread over the day's first hours; two logs of each day share a time, so the id orders them.
      timestamp: new Date(dayStart(3 - i) + Math.floor(k / 2) * 7_000 + 1),
    })),
  );
  await createLogs(t, projectId, [...entries, { message: 'tomorrow', level: 'error', timestamp: new Date(dayStart(-1) + 60_000) }]);
  // Another project's logs on the same days: not counted, not listed.
  await createLogs(t, neighbour, Array.from({ length: 300 }, (_, k) => ({ message: `neighbour ${k}`, timestamp: new Date(dayStart(k % 4) + k) })));
});
afterAll(() => t.close());

/** The ids of the whole list, newest first, read in order. */
async function wholeList(level?: string) {
  const rows = await queryRows<{ id: number | string }>(
    t.database.db,
    sql`select id from logs where project_id = ${projectId} ${level ? sql`and level = ${level}` : sql``}
         order by "timestamp" desc, id desc`,
  );
  return rows.map((r) => Number(r.id));
}

async function page(query: string) {
  const response = await t.app.inject({ method: 'GET', url: `/api/projects/${projectId}/logs?${query}`, headers: owner.headers });
  expect(response.statusCode, response.body).toBe(200);
  return response.json() as { data: LogBody[]; meta: { total: number; total_is_estimate: boolean } };
}

describe('deep pages by number', () => {
  it('hold the logs the whole list holds at their offsets, across the days\' edges and to the last page', async () => {
    const all = await wholeList();
    expect(all).toHaveLength(2201);
    // The newest day holds 1 log, today 400, yesterday 600: offsets 1 000 and 1 500 cross the edges.
    for (let number = 11; number <= 46; number++) {
      const body = await page(`page=${number}&per_page=50`);
      const offset = (number - 1) * 50;
      expect(body.data.map((l) => l.id), `page ${number}`).toEqual(all.slice(offset, offset + 50));
      expect(body.meta).toMatchObject({ total: 2201, total_is_estimate: false });
    }
  });

  it('hold them with a level too', async () => {
    const errors = await wholeList('error');
    expect(errors).toHaveLength(1101);
    for (const [number, perPage] of [[11, 50], [13, 50], [21, 50], [22, 50], [23, 50], [51, 20], [111, 10]] as const) {
      const body = await page(`level=error&page=${number}&per_page=${perPage}`);
      const offset = (number - 1) * perPage;
      expect(body.data.map((l) => l.id), `page ${number} of ${perPage}`).toEqual(errors.slice(offset, offset + perPage));
    }
  });

  it('find the days of a page from the daily rollups, and leave the lists they cannot tell', async () => {
    const db = t.database.db;
    // Offset 500 to 549: yesterday's logs (the 402nd to the 1 001st of the list).
    expect(await pageDays(db, projectId, {}, 50, 500)).toEqual({ from: new Date(dayStart(1)), before: new Date(dayStart(0)), skipped: 401 });
    // Offset 980 to 1 029: from two days ago to the end of yesterday.
    expect(await pageDays(db, projectId, {}, 50, 980)).toEqual({ from: new Date(dayStart(2)), before: new Date(dayStart(0)), skipped: 401 });
    // Past the last log, and filters the level rollups do not hold: the list as it is.
    expect(await pageDays(db, projectId, {}, 50, 2190)).toBeUndefined();
    expect(await pageDays(db, projectId, { source: 'api' }, 50, 500)).toBeUndefined();
    expect(await pageDays(db, projectId, { from: new Date(dayStart(2)) }, 50, 500)).toBeUndefined();
    // A retention longer than the rollups are kept: they may not count the oldest days.
    await db.update(projects).set({ retentionDays: 90 }).where(sql`${projects.id} = ${projectId}`);
    try {
      expect(await pageDays(db, projectId, {}, 50, 500)).toBeUndefined();
      const body = await page('page=12&per_page=50');
      expect(body.data.map((l) => l.id)).toEqual((await wholeList()).slice(550, 600));
    } finally {
      await db.update(projects).set({ retentionDays: 30 }).where(sql`${projects.id} = ${projectId}`);
    }
  });
});
