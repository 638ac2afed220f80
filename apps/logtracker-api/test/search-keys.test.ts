import { queryRows, withTransaction } from '@repo/db';
import { sql, type SQL } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { indexedPage, searchHours } from '../src/modules/logs/logs.indexed.repository.js';
import { hasSearchKeys, hourKey, likePattern } from '../src/modules/logs/logs.filters.repository.js';
import { refreshCommonSearchKeys } from '../src/modules/maintenance/maintenance.repository.js';
import { buildTestApp, createLogs, createProject, createUser, type TestApp } from './helpers.js';

// The project's trigram keys (migration 0017) must find every log whose message contains the
// text, whatever its case, punctuation, words cut at either end, or letters outside ASCII: the
// keys only narrow the rows the message itself is then checked on, and a key the text has but a
// matching message lacks would lose that log.

let t: TestApp;
let project: number;
let neighbour: number;

const MESSAGES = [
  'Upstream gateway timeout after 3000 ms',
  'TIMEOUT while reading /api/orders/42',
  'connection timed out (retry 2 of 5)',
  'Deadlock detected while updating invoice 77, transaction ab12cd rolled back',
  'deadlocked worker restarted',
  'user:42:profile cache miss',
  'Payment 9f86d081 declined: insufficient_funds',
  '100% of disk used on /var/lib/postgresql',
  'Café crème commandé par Zoë à Besançon',
  'ÉTÉ CAFÉ fermé',
  'naïve façade — coöperate',
  'Ошибка подключения к базе данных',
  '数据库连接超时 after 30s',
  'a_b c%d e\\f',
  '  leading and trailing spaces  ',
  'x',
  'ab',
  'tab\tseparated\tvalues',
  'emoji 🚀 launched at 10:00',
];

const SEARCHES = [
  'timeout', 'TIMEOUT', 'imeou', 'time', 'out', 'gateway timeout', 'way time', 'y tim', 'timed out',
  'deadlock', 'eadloc', 'Deadlock detected', 'ck det', 'ab12cd', 'b12c', 'user:42:profile', ':42:', '42',
  'r:4', 'insufficient_funds', 'ent_fu', '100%', '0% of', 'café', 'CAFÉ', 'afé cr', 'crème', 'zoë', 'Besan',
  'çon', 'naïve', 'oöp', 'façade — co', 'ошибка', 'шибк', 'базе данных', '连接超时', '接超', 'a_b', 'c%d', 'e\\f',
  ' leading', 'trailing ', '  leading and', 'tab\tsep', 'values', '🚀 launched', 'emoji 🚀', 'zebrafish', 'xyz', 'ab',
];

beforeAll(async () => {
  t = await buildTestApp();
  const owner = await createUser(t);
  project = (await createProject(t, owner)).id;
  neighbour = (await createProject(t, owner)).id;
  const at = Date.now() - 60_000;
  await createLogs(t, project, MESSAGES.map((message, i) => ({ message, timestamp: new Date(at + i) })));
  // The same messages in another project: its keys are its own, and none of its logs may answer.
  await createLogs(t, neighbour, MESSAGES.map((message, i) => ({ message, timestamp: new Date(at + i) })));
}, 60_000);
afterAll(() => t.close());

/** The messages of the project holding the text, checked on every row with ILIKE alone (no index). */
async function containing(search: string): Promise<string[]> {
  return withTransaction(t.database.db, async (tx) => {
    await tx.execute(sql`set local enable_bitmapscan = off`);
    const rows = await queryRows<{ message: string }>(
      tx,
      sql`select message from logs where project_id = ${project} and message ilike ${likePattern(search)} order by message`,
    );
    return rows.map((r) => r.message);
  });
}

describe('the project trigram keys', () => {
  it('find every log whose message holds the text, and no other project\'s', async () => {
    let keyed = 0;
    for (const search of SEARCHES) {
      const page = await indexedPage(t.database.db, project, { search }, 100, 0);
      const found = page.rows.map((r) => r.message).sort();
      expect(found, search).toEqual((await containing(search)).sort());
      expect(page.rows.every((r) => r.projectId === project), search).toBe(true);
      if (hasSearchKeys(search)) keyed++;
    }
    // Most of them went through the keys (the others: no three letters or digits in a row).
    expect(keyed).toBeGreaterThan(SEARCHES.length * 0.8);
  });

  it('are the keys the index holds: a text\'s keys are a subset of each matching message\'s', async () => {
    const [row] = await queryRows<{ bad: number }>(
      t.database.db,
      sql`select count(*)::int as bad
            from unnest(${sql.raw(`array[${SEARCHES.map((s) => `'${s.replace(/'/g, "''")}'`).join(',')}]`)}::text[]) as s(search)
            join logs l on l.project_id = ${project} and l.message ilike '%' || replace(replace(replace(s.search, '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%'
           where not (log_search_keys(l.project_id, l.message, l."timestamp") @> log_search_query_keys(${project}::int, s.search))`,
    );
    expect(row?.bad).toBe(0);
    // Keys differ by project: the same word in two projects shares none.
    const [overlap] = await queryRows<{ shared: boolean }>(
      t.database.db,
      sql`select log_search_query_keys(${project}::int, 'deadlock') && log_search_query_keys(${neighbour}::int, 'deadlock') as shared`,
    );
    expect(overlap?.shared).toBe(false);
    // A text without three letters or digits in a row has no key.
    const [none] = await queryRows<{ n: number }>(t.database.db, sql`select cardinality(log_search_query_keys(1, 'a_b')) as n`);
    expect(Number(none?.n)).toBe(0);
  });
});

describe('the keys common in a project, left to the message check', () => {
  // A search looks its text up by the keys that are not common in the project (migration 0020):
  // the message is checked on every row found, so any subset of the keys finds the same logs.
  const keysOf = async (fn: SQL) =>
    (await queryRows<{ k: string }>(t.database.db, sql`select unnest(${fn})::text as k order by 1`)).map((r) => r.k);
  const rareKeys = (search: string) => keysOf(sql`log_search_rare_query_keys(${project}::int, ${search}::text)`);
  const allKeys = (search: string) => keysOf(sql`log_search_query_keys(${project}::int, ${search}::text)`);
  const refresh = (minShare: number, minLogs: number) => refreshCommonSearchKeys(t.database.db, new Date(Date.now() - 86_400_000), 10_000, minShare, minLogs);
  afterAll(async () => {
    await t.database.db.execute(sql`delete from log_search_common_keys`);
  });

  it('keeps the keys a share of the project\'s sampled logs hold, for the projects with enough of them', async () => {
    // Two of the 19 messages hold "deadlock", two "timeout" (once in capitals), one "gateway".
    expect(await refresh(0.1, 1)).toBeGreaterThan(0);
    const common = await queryRows<{ project_id: number; share: number }>(t.database.db, sql`select project_id, share from log_search_common_keys`);
    expect(new Set(common.map((c) => c.project_id))).toEqual(new Set([project, neighbour]));
    expect(common.every((c) => c.share >= 0.1 && c.share <= 1)).toBe(true);
    // A word in two of the messages: every key of it is common, so the search keeps them all.
    expect(await rareKeys('deadlock')).toEqual(await allKeys('deadlock'));
    // "gateway timeout": the words' common keys left out, "gateway"'s kept.
    const kept = await rareKeys('gateway timeout');
    const every = await allKeys('gateway timeout');
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(every.length);
    expect(every).toEqual(expect.arrayContaining(kept));
    // Fewer logs in the sample than asked for: no common keys, every key serves.
    expect(await refresh(0.1, 1_000)).toBe(0);
    expect(await rareKeys('gateway timeout')).toEqual(every);
  });

  it('find every log whose message holds the text all the same', async () => {
    // Keys in a tenth of the messages or more count as common: most texts lose some.
    await refresh(0.1, 1);
    let fewer = 0;
    for (const search of SEARCHES.filter(hasSearchKeys)) {
      const page = await indexedPage(t.database.db, project, { search }, 100, 0);
      expect(page.rows.map((r) => r.message).sort(), search).toEqual((await containing(search)).sort());
      if ((await rareKeys(search)).length < (await allKeys(search)).length) fewer++;
    }
    expect(fewer).toBeGreaterThan(5);
  });
});

describe('the keys of the hours a search is bounded to', () => {
  // A search of a few hours looks up its text's keys with each hour's (migration 0019): every log
  // of the range must be found, at the hours' edges and stamped ahead of the clock alike, and none
  // outside it.
  const HOUR = 3_600_000;
  let hourly: number;
  const thisHour = Math.floor(Date.now() / HOUR) * HOUR;
  const stamps = [
    thisHour - 3 * HOUR - 1,
    thisHour - 3 * HOUR,
    thisHour - 2 * HOUR + 59 * 60_000,
    thisHour - HOUR,
    thisHour - 1,
    thisHour,
    Date.now() - 1_000,
    // Ahead of the clock: a shipper's wrong time, or a zone taken for UTC.
    thisHour + 2 * HOUR + 5,
    thisHour + 30 * HOUR,
  ];

  beforeAll(async () => {
    const owner = await createUser(t);
    hourly = (await createProject(t, owner)).id;
    await createLogs(
      t,
      hourly,
      stamps.flatMap((at, i) => [
        { message: `replica lag exceeded on shard ${i}`, timestamp: new Date(at) },
        { message: `heartbeat ${i}`, timestamp: new Date(at) },
      ]),
    );
  });

  async function brute(from: number, to?: number) {
    const rows = await queryRows<{ id: number | string }>(
      t.database.db,
      sql`select id from logs where project_id = ${hourly} and message ilike '%lag exceeded%'
            and "timestamp" >= ${new Date(from).toISOString()}::timestamptz
            ${to === undefined ? sql`` : sql`and "timestamp" <= ${new Date(to).toISOString()}::timestamptz`}
          order by "timestamp" desc, id desc`,
    );
    return rows.map((r) => Number(r.id));
  }

  it('finds every match of the range through the hours\' keys, and no other', async () => {
    const latest = new Date(Math.floor(Math.max(...stamps) / HOUR) * HOUR);
    const ranges: [number, number | undefined][] = [
      [thisHour - 3 * HOUR, thisHour - 1],
      [thisHour - 3 * HOUR - 1, thisHour],
      [thisHour - 2 * HOUR, undefined],
      [Date.now() - HOUR, undefined],
      [thisHour + HOUR, thisHour + 3 * HOUR],
    ];
    for (const [from, to] of ranges) {
      const filters = { search: 'lag exceeded', from: new Date(from), ...(to === undefined ? {} : { to: new Date(to) }), latest };
      const hours = searchHours(filters);
      const label = `${new Date(from).toISOString()} – ${to === undefined ? 'open' : new Date(to).toISOString()}`;
      // Open to the future, the range runs to the newest hour holding logs: 31 hours ahead, too many.
      if (to === undefined && from >= thisHour - 2 * HOUR) expect(hours, label).toBeUndefined();
      else expect(hours?.length, label).toBeGreaterThan(0);
      const page = await indexedPage(t.database.db, hourly, filters, 50, 0);
      expect(page.rows.map((r) => Number(r.id)), label).toEqual(await brute(from, to));
      expect(page.matched, label).toBe((await brute(from, to)).length);
    }
  });

  it('writes each hour\'s key as the index computes it', async () => {
    const instants = [thisHour, thisHour + HOUR - 1, Date.UTC(2026, 0, 1), Date.UTC(1999, 11, 31, 23, 59, 59, 999), 0];
    for (const projectId of [1, hourly, 2_147_483_647]) {
      for (const at of instants) {
        const [row] = await queryRows<{ key: string }>(
          t.database.db,
          sql`select log_hour_key(${projectId}::int, ${new Date(at).toISOString()}::timestamptz)::text as key`,
        );
        expect(hourKey(projectId, new Date(at)), `${projectId} ${new Date(at).toISOString()}`).toBe(row?.key);
      }
    }
  });

  it('finds the logs of a range open to the future, through its hours\' keys, up to its newest log', async () => {
    const owner = await createUser(t);
    const recent = (await createProject(t, owner)).id;
    const now = Date.now();
    const stamps = [now - 90 * 60_000, now - 30 * 60_000, now - 5 * 60_000, now + 10 * 60_000, now + 70 * 60_000];
    await createLogs(t, recent, stamps.map((at, i) => ({ message: `disk quota exceeded on volume ${i}`, timestamp: new Date(at) })));
    const [row] = await queryRows<{ latest: string | Date }>(
      t.database.db,
      sql`select max(bucket) as latest from log_level_counts where project_id = ${recent} and grain = 'hour'`,
    );
    const filters = { search: 'quota exceeded', from: new Date(now - HOUR), latest: new Date(row!.latest) };
    expect(searchHours(filters)?.length).toBeGreaterThanOrEqual(2);
    const page = await indexedPage(t.database.db, recent, filters, 50, 0);
    // The four within the range, the one stamped 70 minutes ahead among them; not the one before it.
    expect(page.rows.map((r) => r.timestamp.getTime())).toEqual(stamps.slice(1).reverse().map((at) => at));
    expect(page.matched).toBe(4);
  });

  it('runs an open range to the newest hour with logs, and the next hour at least', async () => {
    const now = Date.now();
    const current = Math.floor(now / HOUR) * HOUR;
    const hours = searchHours({ from: new Date(now - HOUR), latest: new Date(current - 5 * HOUR) });
    expect(hours?.map((h) => h.getTime())).toEqual([current - HOUR, current, current + HOUR]);
    const ahead = searchHours({ from: new Date(now - HOUR), latest: new Date(current + 2 * HOUR) });
    expect(ahead?.at(-1)?.getTime()).toBe(current + 2 * HOUR);
    // Without the newest hour, an open range has no end to look up hours to; nor has one without a start.
    expect(searchHours({ from: new Date(now - HOUR) })).toBeUndefined();
    expect(searchHours({ to: new Date(now) })).toBeUndefined();
    // A slice's older end (`before`) is exclusive; a cursor ends the range at its log.
    expect(searchHours({ from: new Date(thisHour - 2 * HOUR), before: new Date(thisHour) })?.length).toBe(2);
    expect(searchHours({ from: new Date(thisHour - 2 * HOUR), after: { timestamp: new Date(thisHour - HOUR + 5).toISOString(), id: 1 } })?.length).toBe(2);
    // More than eight hours: the text's keys alone.
    expect(searchHours({ from: new Date(thisHour - 9 * HOUR), to: new Date(thisHour) })).toBeUndefined();
  });

  it('finds through the hours\' keys the logs of a cursor page of a bounded search', async () => {
    const from = thisHour - 3 * HOUR - 1;
    const to = thisHour + 3 * HOUR;
    const all = await brute(from, to);
    const first = await indexedPage(t.database.db, hourly, { search: 'lag exceeded', from: new Date(from), to: new Date(to) }, 3, 0);
    const last = first.rows.at(-1)!;
    const next = await indexedPage(
      t.database.db,
      hourly,
      { search: 'lag exceeded', from: new Date(from), to: new Date(to), after: { timestamp: last.cursorTime, id: last.id } },
      50,
      0,
    );
    expect([...first.rows, ...next.rows].map((r) => Number(r.id))).toEqual(all);
  });

  it('answers the rows of a page of a few hours whole, as the page read by its keys has them', async () => {
    // The matches of a few hours are gathered whole and the page kept from them; without the hours'
    // keys, the page's rows are read again by their key: the same logs, field for field (the
    // cursor's time to the microsecond, the context, the times as dates).
    const owner = await createUser(t);
    const project = (await createProject(t, owner)).id;
    const now = Date.now();
    await createLogs(
      t,
      project,
      Array.from({ length: 12 }, (_, i) => ({
        message: `lock wait timeout on table orders_${i}`,
        level: i % 3 === 0 ? ('error' as const) : ('warning' as const),
        source: `db-${i % 2}`,
        context: i % 2 ? { attempt: i, tables: ['orders', `orders_${i}`] } : undefined,
        timestamp: new Date(now - i * 7 * 60_000),
      })),
    );
    const [row] = await queryRows<{ latest: string | Date }>(
      t.database.db,
      sql`select max(bucket) as latest from log_level_counts where project_id = ${project} and grain = 'hour'`,
    );
    const filters = { search: 'wait timeout', from: new Date(now - 2 * HOUR), latest: new Date(row!.latest) };
    expect(searchHours(filters)?.length).toBeGreaterThan(0);
    const whole = await indexedPage(t.database.db, project, filters, 5, 0);
    const byKey = await indexedPage(t.database.db, project, filters, 5, 0, { hourKeys: false });
    expect(whole.rows).toHaveLength(5);
    expect(whole.rows).toEqual(byKey.rows);
    expect(whole.matched).toBe(12);
    expect(byKey.matched).toBe(12);
    expect(whole.rows[1]!.context).toEqual({ attempt: 1, tables: ['orders', 'orders_1'] });
    expect(whole.rows[0]!.cursorTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    const next = await indexedPage(t.database.db, project, { ...filters, after: { timestamp: whole.rows[4]!.cursorTime, id: whole.rows[4]!.id } }, 5, 0);
    const nextByKey = await indexedPage(t.database.db, project, { ...filters, after: { timestamp: whole.rows[4]!.cursorTime, id: whole.rows[4]!.id } }, 5, 0, { hourKeys: false });
    expect(next.rows).toEqual(nextByKey.rows);
    expect(next.rows.map((r) => r.message)).toEqual([5, 6, 7, 8, 9].map((i) => `lock wait timeout on table orders_${i}`));
  });
});
