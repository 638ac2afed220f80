import type { PGlite } from '@electric-sql/pglite';
import { openPglite, type ExtensionName } from './pglite.js';

/**
 * PGlite instances kept across the test files of a worker (vitest runs the files of a worker one
 * after the other, in one process): starting one from a dump costs about a second of CPU, putting
 * one back as the dump left it a few dozen milliseconds. An instance goes back only where that is
 * safe: its catalog (tables, functions, triggers, schemas, roles, extensions, settings, planner
 * statistics) must be what the dump's was; then every table is emptied, the rows the migrations
 * wrote are put back, the sequences and the session's settings are reset. An instance whose
 * catalog changed (a test that migrates, drops a partition, creates a function, runs ANALYZE) is
 * closed instead.
 */

interface Baseline {
  /** The digest of the catalog's user-visible objects. */
  catalog: string;
  /** Every user table but partitions, qualified and quoted: what TRUNCATE empties. */
  tables: string[];
  /** The rows the dump holds, per table, with the columns they are written back through. */
  rows: { table: string; columns: string[]; overriding: boolean; json: string }[];
  /** Each sequence's value in the dump: `setval(name, value, called)`. */
  sequences: { name: string; value: string; called: boolean }[];
}

interface Pool {
  idle: PGlite[];
  baseline?: Baseline;
}

/** Instances kept idle per dump: a file seldom holds more than two databases at once. */
const IDLE_PER_DUMP = 2;
const pools = new Map<string, Pool>();

const CATALOG_DIGEST = `
  select md5(coalesce(string_agg(item, ',' order by item), '')) as digest from (
    select concat_ws(' ', 'class', c.oid, c.relname, c.relkind::text, c.relnamespace) from pg_class c
     where c.relnamespace not in ('pg_catalog'::regnamespace, 'information_schema'::regnamespace) and c.relpersistence <> 't'
    union all select concat_ws(' ', 'proc', oid, proname) from pg_proc
     where pronamespace not in ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
    union all select concat_ws(' ', 'trigger', oid, tgname, tgenabled::text) from pg_trigger where not tgisinternal
    union all select concat_ws(' ', 'namespace', oid, nspname) from pg_namespace
    union all select concat_ws(' ', 'role', oid, rolname) from pg_authid
    union all select concat_ws(' ', 'extension', oid, extname, extversion) from pg_extension
    union all select concat_ws(' ', 'setting', setdatabase, setrole, array_to_string(setconfig, ';')) from pg_db_role_setting
    union all select concat_ws(' ', 'statistics', count(*)) from pg_statistic where starelid >= 16384
  ) as catalog(item)`;

const USER_TABLES = `
  select format('%I.%I', n.nspname, c.relname) as name, c.oid::int as oid
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
   where c.relkind in ('r', 'p') and not c.relispartition
     and n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg\\_%'
   order by 1`;

async function one<T>(client: PGlite, query: string, params: unknown[] = []): Promise<T> {
  const result = await client.query<T>(query, params);
  return result.rows[0] as T;
}

/** What a fresh instance from the dump holds, read once per dump and worker. */
async function readBaseline(client: PGlite): Promise<Baseline> {
  const { digest } = await one<{ digest: string }>(client, CATALOG_DIGEST);
  const tables = (await client.query<{ name: string; oid: number }>(USER_TABLES)).rows;
  const rows: Baseline['rows'] = [];
  for (const table of tables) {
    const { json } = await one<{ json: string | null }>(client, `select json_agg(t)::text as json from ${table.name} as t`);
    if (!json) continue;
    // Written back through every column but the generated ones, identities as they were.
    const columns = (
      await client.query<{ name: string; identity: string }>(
        `select quote_ident(attname) as name, attidentity as identity from pg_attribute
          where attrelid = $1 and attnum > 0 and not attisdropped and attgenerated = '' order by attnum`,
        [table.oid],
      )
    ).rows;
    rows.push({ table: table.name, columns: columns.map((c) => c.name), overriding: columns.some((c) => c.identity === 'a'), json });
  }
  const sequences = (
    await client.query<{ name: string; value: string; called: boolean }>(
      `select format('%I.%I', schemaname, sequencename) as name,
              coalesce(last_value, start_value)::text as value, last_value is not null as called
         from pg_sequences`,
    )
  ).rows;
  return { catalog: digest, tables: tables.map((t) => t.name), rows, sequences };
}

/** Puts an instance back as the dump left it; false (and nothing changed) when that is not safe. */
async function restore(client: PGlite, baseline: Baseline): Promise<boolean> {
  // A transaction a test left open ends here (outside one, ROLLBACK only warns).
  await client.exec('ROLLBACK');
  const { digest } = await one<{ digest: string }>(client, CATALOG_DIGEST);
  if (digest !== baseline.catalog) return false;
  await client.transaction(async (tx) => {
    // The dump's rows go back as they were: no trigger runs, no foreign key is checked.
    await tx.exec(`SET LOCAL session_replication_role = replica`);
    if (baseline.tables.length > 0) await tx.exec(`TRUNCATE ${baseline.tables.join(', ')} RESTART IDENTITY CASCADE`);
    for (const { table, columns, overriding, json } of baseline.rows) {
      const list = columns.join(', ');
      await tx.query(
        `insert into ${table} (${list}) ${overriding ? 'overriding system value ' : ''}
         select ${list} from json_populate_recordset(null::${table}, $1::json)`,
        [json],
      );
    }
    for (const { name, value, called } of baseline.sequences) {
      await tx.query(`select setval($1::regclass, $2::bigint, $3)`, [name, value, called]);
    }
  });
  await client.exec('RESET ALL; UNLISTEN *; SELECT pg_advisory_unlock_all(); CLOSE ALL; DEALLOCATE ALL;');
  return true;
}

/** An instance from the dump named `key`: an idle one put back as the dump left it, or a new one. */
export async function takePglite(key: string, extensions: readonly ExtensionName[] | undefined, dump: () => Promise<Blob>): Promise<PGlite> {
  let pool = pools.get(key);
  if (!pool) pools.set(key, (pool = { idle: [] }));
  const idle = pool.idle.pop();
  if (idle) return idle;
  const client = await openPglite('memory://', extensions, await dump());
  pool.baseline ??= await readBaseline(client);
  return client;
}

/** Gives an instance back when its test database is destroyed: kept for the next file, or closed. */
export async function givePglite(key: string, client: PGlite): Promise<void> {
  const pool = pools.get(key);
  let kept = false;
  if (pool?.baseline && pool.idle.length < IDLE_PER_DUMP && !client.closed) {
    kept = await restore(client, pool.baseline).catch(() => false);
  }
  if (kept && pool) pool.idle.push(client);
  else if (!client.closed) await client.close();
}
