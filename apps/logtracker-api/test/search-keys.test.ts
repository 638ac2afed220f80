import { queryRows, withTransaction } from '@repo/db';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { indexedPage } from '../src/modules/logs/logs.indexed.repository.js';
import { hasSearchKeys, likePattern } from '../src/modules/logs/logs.filters.repository.js';
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
           where not (log_search_keys(l.project_id, l.message) @> log_search_query_keys(${project}::int, s.search))`,
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
