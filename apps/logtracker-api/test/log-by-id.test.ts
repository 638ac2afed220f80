import { queryRows } from '@repo/db';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDailyPartitions, refreshLogPartitionIds } from '../src/modules/maintenance/maintenance.repository.js';
import { buildTestApp, createLogs, createProject, createUser, expectError, type LogBody, type TestApp, type TestUser } from './helpers.js';

// GET /api/logs/{id} probes first the daily partitions whose range of ids holds the id
// (log_partition_ids, read anew by every maintenance pass), and every partition when none does.

const DAY_MS = 86_400_000;
/** Noon (UTC) of the day `daysAgo` days before today. */
const noon = (daysAgo: number) => new Date(Math.floor(Date.now() / DAY_MS - daysAgo) * DAY_MS + DAY_MS / 2);
const dayOf = (at: Date) => new Date(Math.floor(at.getTime() / DAY_MS) * DAY_MS).toISOString();

let t: TestApp;
let owner: TestUser;
let stranger: TestUser;
let projectId: number;

beforeAll(async () => {
  t = await buildTestApp();
  owner = await createUser(t);
  stranger = await createUser(t);
  projectId = (await createProject(t, owner)).id;
  // The days of the logs below: 13 to 5 days ago, then yesterday to a week ahead.
  await ensureDailyPartitions(t.database.db, noon(12));
  await ensureDailyPartitions(t.database.db, new Date());
});
afterAll(() => t.close());

const get = (id: number, who: TestUser = owner) => t.app.inject({ method: 'GET', url: `/api/logs/${id}`, headers: who.headers });

async function message(id: number) {
  const response = await get(id);
  expect(response.statusCode, response.body).toBe(200);
  return (response.json() as { data: LogBody }).data.message;
}

async function ranges() {
  const rows = await queryRows<{ day: Date | string; min_id: number | string; max_id: number | string | null }>(
    t.database.db,
    sql`select day, min_id, max_id from log_partition_ids order by day`,
  );
  return rows.map((r) => ({ day: new Date(r.day).toISOString(), min: Number(r.min_id), max: r.max_id === null ? null : Number(r.max_id) }));
}

describe('a log by id, through the ranges of ids of the daily partitions', () => {
  it('finds every log before the ranges are read, through them after, and a late log of an old day too', async () => {
    const [old] = await createLogs(t, projectId, [{ message: 'ten days ago', timestamp: noon(10) }]);
    const [week] = await createLogs(t, projectId, [{ message: 'six days ago', timestamp: noon(6) }]);
    const [today] = await createLogs(t, projectId, [{ message: 'today', timestamp: new Date() }]);
    if (!old || !week || !today) throw new Error('no log');
    expect(await ranges()).toEqual([]);
    expect([await message(old.id), await message(week.id), await message(today.id)]).toEqual(['ten days ago', 'six days ago', 'today']);

    expect(await refreshLogPartitionIds(t.database.db)).toBe(3);
    // Days past are closed above; the newest are open to the logs still arriving.
    expect(await ranges()).toEqual([
      { day: dayOf(noon(10)), min: old.id, max: old.id },
      { day: dayOf(noon(6)), min: week.id, max: week.id },
      { day: dayOf(new Date()), min: today.id, max: null },
    ]);
    expect([await message(old.id), await message(week.id), await message(today.id)]).toEqual(['ten days ago', 'six days ago', 'today']);

    // Stored since the ranges were read, beyond its day's range: found in every partition.
    const [late] = await createLogs(t, projectId, [{ message: 'late, of ten days ago', timestamp: noon(10) }]);
    const [newer] = await createLogs(t, projectId, [{ message: 'newer', timestamp: new Date() }]);
    if (!late || !newer) throw new Error('no log');
    expect(await message(late.id)).toBe('late, of ten days ago');
    expect(await message(newer.id)).toBe('newer');
    expect(await refreshLogPartitionIds(t.database.db)).toBe(3);
    expect((await ranges())[0]).toEqual({ day: dayOf(noon(10)), min: old.id, max: late.id });
  });

  it('answers 404 for an id no log has, and to a stranger whatever range holds the log', async () => {
    const [log] = await createLogs(t, projectId, [{ message: 'members only', timestamp: noon(6) }]);
    if (!log) throw new Error('no log');
    await refreshLogPartitionIds(t.database.db);
    expectError(await get(log.id, stranger), 404, 'not_found');
    expectError(await get(log.id + 1_000_000), 404, 'not_found');
    expect(await message(log.id)).toBe('members only');
  });

  it('finds a log of history stored in any order of time, whose id many days hold, in every partition', async () => {
    const days = [12, 11, 9, 7];
    const first = await createLogs(t, projectId, days.map((d) => ({ message: `first of ${d} days ago`, timestamp: noon(d) })));
    const second = await createLogs(t, projectId, days.map((d) => ({ message: `second of ${d} days ago`, timestamp: noon(d) })));
    await refreshLogPartitionIds(t.database.db);
    const wanted = first.at(-1);
    if (!wanted || second.length !== 4) throw new Error('no logs');
    const holding = (await ranges()).filter((r) => r.min <= wanted.id && (r.max === null || wanted.id <= r.max));
    expect(holding.length).toBeGreaterThan(3);
    expect(await message(wanted.id)).toBe('first of 7 days ago');
    for (const log of [...first, ...second]) expect(await message(log.id)).toBe(log.message);
  });

  it('keeps no range for an emptied partition', async () => {
    const otherProject = (await createProject(t, owner)).id;
    const [gone] = await createLogs(t, otherProject, [{ message: 'soon deleted', timestamp: noon(8) }]);
    if (!gone) throw new Error('no log');
    await refreshLogPartitionIds(t.database.db);
    expect((await ranges()).map((r) => r.day)).toContain(dayOf(noon(8)));
    await t.database.db.execute(sql`delete from logs where id = ${gone.id}`);
    await refreshLogPartitionIds(t.database.db);
    expect((await ranges()).map((r) => r.day)).not.toContain(dayOf(noon(8)));
    expectError(await get(gone.id), 404, 'not_found');
  });
  it('plans its probes generically from the first lookup, and finds logs of other days through the same plans', async () => {
    // A connection's first five lookups planned every partition afresh under plan_cache_mode auto
    // (migration 0022): the p95 of a pool's first minutes.
    const [config] = await queryRows<{ config: string[] | null }>(t.database.db, sql`select proconfig as config from pg_proc where proname = 'log_for_member'`);
    expect(config?.config).toEqual(['plan_cache_mode=force_generic_plan']);
    const days = [11, 7, 0];
    const created = await Promise.all(days.map((d) => createLogs(t, projectId, [{ message: `generic ${d}`, timestamp: noon(d) }])));
    await refreshLogPartitionIds(t.database.db);
    for (let round = 0; round < 3; round++) {
      for (const [i, [log]] of created.entries()) expect(await message(log!.id)).toBe(`generic ${days[i]}`);
    }
    expect((await get(created[0]![0]!.id, stranger)).statusCode).toBe(404);
  });
});
