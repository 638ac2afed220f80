import { queryRows } from '@repo/db';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from './helpers.js';

/**
 * The tables a Citus cluster distributes by `project_id` (infra/SCALING.md): the logs and what grows
 * with them. Citus requires the distribution column in every primary key and unique index of a
 * distributed table; every other index carries it too, the search's index among them (its keys
 * are the project's trigrams, an expression over project_id and the message).
 */
const DISTRIBUTED = ['logs', 'log_patterns', 'log_level_counts', 'log_source_counts', 'patterns', 'miner_states'];

/**
 * Tables with a project_id that stay on the coordinator (small, written by people, not by ingest):
 * a new table with the column must be put in one list or the other.
 */
const ON_COORDINATOR = ['project_members', 'ingest_keys', 'alerts', 'analyses', 'tail_tickets'];

/**
 * Tables with a project_id copied to every worker (reference tables): small, and read by the
 * statements that run on the shards (every search reads the common keys of its project's text).
 */
const REFERENCE = ['log_search_common_keys'];

describe('keys of the tables distributed by project (the catalog after migration)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(() => t.close());

  it('every primary key, unique index and index of the distributed tables and their partitions includes project_id', async () => {
    const indexes = await queryRows<{ table: string; index: string; kind: string; columns: string[] }>(
      t.database.db,
      sql`select c.relname as "table", i.relname as "index",
                 case when x.indisprimary then 'primary key' when x.indisunique then 'unique' else 'index' end as kind,
                 array(select a.attname::text from unnest(x.indkey) k join pg_attribute a on a.attrelid = c.oid and a.attnum = k)
                   || case when x.indexprs is not null and pg_get_expr(x.indexprs, x.indrelid) like '%project_id%' then array['project_id (in an expression)'] else array[]::text[] end
                   as columns
          from pg_index x
          join pg_class c on c.oid = x.indrelid
          join pg_class i on i.oid = x.indexrelid
          where pg_table_is_visible(c.oid)
            and (c.relname = any(${`{${DISTRIBUTED.join(',')}}`}::text[])
                 or exists (select 1 from pg_inherits h join pg_class p on p.oid = h.inhparent
                            where h.inhrelid = c.oid and p.relname = any(${`{${DISTRIBUTED.join(',')}}`}::text[])))`,
    );
    // Every distributed table was found, with its keys (log_level_counts and log_source_counts have indexes only).
    for (const table of DISTRIBUTED) expect(indexes.some((row) => row.table === table), table).toBe(true);
    for (const table of ['logs', 'log_patterns', 'patterns', 'miner_states']) {
      expect(indexes.some((row) => row.table === table && row.kind === 'primary key'), `${table} has a primary key`).toBe(true);
    }
    // The partitions of logs were read too (their keys are what Citus checks shard by shard).
    expect(indexes.some((row) => row.table.startsWith('logs_') && row.kind === 'primary key')).toBe(true);
    // The search's index holds the project in its expression (log_search_keys(project_id, message, timestamp)).
    expect(indexes.filter((row) => row.index.includes('search_keys') && row.columns.includes('project_id (in an expression)')).length).toBeGreaterThan(1);
    const missing = indexes
      .filter((row) => !row.columns.some((column) => column.startsWith('project_id')))
      .map((row) => `${row.table}.${row.index} (${row.kind}: ${row.columns.join(', ')})`);
    expect(missing).toEqual([]);
  });

  it('every table with a project_id is either distributed, named as kept on the coordinator, or a reference table', async () => {
    const tables = await queryRows<{ table: string }>(
      t.database.db,
      sql`select distinct c.relname as "table"
          from pg_attribute a join pg_class c on c.oid = a.attrelid
          where a.attname = 'project_id' and not a.attisdropped and c.relkind in ('r', 'p')
            and not c.relispartition and pg_table_is_visible(c.oid)`,
    );
    expect(tables.map((row) => row.table).sort()).toEqual([...DISTRIBUTED, ...ON_COORDINATOR, ...REFERENCE].sort());
  });
});
