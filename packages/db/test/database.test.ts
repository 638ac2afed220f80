import { asc, count, eq, ilike, like } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { arrayLiteral, copyText, escapeLike, executeCount, pageWithTotal, queryRows, sql, sqlState, totalOfList, withGenericPlan, withTransaction, type DbOrTx } from '../src/index.js';
import { createTestDatabase, type TestDatabase } from '../src/testing.js';
import { initMigrations, schema, serviceLogs, vehicles } from './fixtures.js';

// Runs on whichever backend createTestDatabase gives: PGlite in memory, or a fresh database on the
// server named by TEST_DATABASE_URL.
let handle: TestDatabase<typeof schema>;

beforeAll(async () => {
  handle = await createTestDatabase({ schema, migrationsFolder: initMigrations(), customPlanPoolSize: 1 });
}, 60_000);

afterAll(async () => {
  await handle?.destroy();
});

beforeEach(async () => {
  await handle.db.execute(sql`truncate table ${vehicles} restart identity cascade`);
});

async function names(db: DbOrTx = handle.db): Promise<string[]> {
  const rows = await db.select({ name: vehicles.name }).from(vehicles).orderBy(asc(vehicles.id));
  return rows.map((r) => r.name);
}

describe('migrations', () => {
  it('created the tables of the schema, usable through drizzle', async () => {
    const [car] = await handle.db.insert(vehicles).values({ name: 'Toyota Corolla', plate: 'AB-123' }).returning();
    expect(car).toMatchObject({ id: 1, name: 'Toyota Corolla', plate: 'AB-123' });
    expect(car!.createdAt).toBeInstanceOf(Date);
    await handle.db.insert(serviceLogs).values({ vehicleId: car!.id, note: 'Oil change' });
    const joined = await handle.db
      .select({ name: vehicles.name, note: serviceLogs.note })
      .from(serviceLogs)
      .innerJoin(vehicles, eq(vehicles.id, serviceLogs.vehicleId));
    expect(joined).toEqual([{ name: 'Toyota Corolla', note: 'Oil change' }]);
  });

  it('recorded the migration, and running it again changes nothing', async () => {
    await handle.migrate();
    const rows = await queryRows<{ hash: string; created_at: unknown }>(
      handle.db,
      sql`select hash, created_at from drizzle.__drizzle_migrations`,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(Number(rows[0]!.created_at)).toBe(1_700_000_000_000);
  });

  it('applied the constraints: unique plate, cascading foreign key', async () => {
    await handle.db.insert(vehicles).values({ name: 'A', plate: 'SAME' });
    await expect(handle.db.insert(vehicles).values({ name: 'B', plate: 'SAME' })).rejects.toThrow();
    await expect(handle.db.insert(serviceLogs).values({ vehicleId: 999, note: 'orphan' })).rejects.toThrow();

    const [car] = await handle.db.insert(vehicles).values({ name: 'C', plate: 'C-1' }).returning();
    await handle.db.insert(serviceLogs).values([
      { vehicleId: car!.id, note: 'one' },
      { vehicleId: car!.id, note: 'two' },
    ]);
    await handle.db.delete(vehicles).where(eq(vehicles.id, car!.id));
    expect(await handle.db.select().from(serviceLogs)).toEqual([]);
  });

  it('created the pg_trgm extension, so trigram functions work', async () => {
    const ext = await queryRows<{ extname: string }>(handle.db, sql`select extname from pg_extension where extname = 'pg_trgm'`);
    expect(ext).toEqual([{ extname: 'pg_trgm' }]);
    const [row] = await queryRows<{ same: number; close: number; far: number }>(
      handle.db,
      sql`select similarity('brake pads', 'brake pads')::float8 as same,
                 similarity('brake pads', 'brake pad')::float8 as close,
                 similarity('brake pads', 'windscreen')::float8 as far`,
    );
    expect(row!.same).toBe(1);
    expect(row!.close).toBeGreaterThan(0.5);
    expect(row!.far).toBeLessThan(0.1);
  });

  it('built a trigram GIN index that answers fuzzy and substring searches', async () => {
    const indexes = await queryRows<{ indexdef: string }>(
      handle.db,
      sql`select indexdef from pg_indexes where tablename = 'vehicles' and indexname = 'vehicles_name_trgm'`,
    );
    expect(indexes).toHaveLength(1);
    expect(indexes[0]!.indexdef).toMatch(/USING gin \(name gin_trgm_ops\)/);

    await handle.db.insert(vehicles).values([
      { name: 'Toyota Corolla', plate: 'T-1' },
      { name: 'Volkswagen Golf', plate: 'V-1' },
      { name: 'Toyota Yaris', plate: 'T-2' },
    ]);
    const fuzzy = await queryRows<{ name: string }>(
      handle.db,
      sql`select name from vehicles where name % ${'Toyta Corola'} order by name`,
    );
    expect(fuzzy.map((r) => r.name)).toEqual(['Toyota Corolla']);

    // With sequential scans off, the planner answers a substring ILIKE from the trigram index.
    const plan = await withTransaction(handle.db, async (tx) => {
      await tx.execute(sql`set local enable_seqscan = off`);
      return queryRows<{ 'QUERY PLAN': string }>(tx, sql`explain select * from vehicles where name ilike ${'%yot%'}`);
    });
    expect(plan.map((r) => r['QUERY PLAN']).join('\n')).toContain('vehicles_name_trgm');
  });
});

describe('ping', () => {
  it('answers ok with a latency', async () => {
    const result = await handle.ping();
    expect(result.ok).toBe(true);
    expect(result.error).toBeUndefined();
    expect(result.latencyMs).toBeGreaterThanOrEqual(0);
    expect(result.latencyMs).toBeLessThan(5_000);
  });

  it('names its driver', () => {
    expect(handle.driver).toBe(process.env.TEST_DATABASE_URL ? 'postgres' : 'pglite');
  });
});

describe('plans', () => {
  it('keeps prepared plans on the main pool, plans every statement for its values on the custom-plan one, and neither compiles nor runs in parallel', async () => {
    const mode = async (db: DbOrTx) =>
      (await queryRows<{ plan_cache_mode: string }>(db, sql`select current_setting('plan_cache_mode') as plan_cache_mode`))[0]
        ?.plan_cache_mode;
    expect(await mode(handle.db)).toBe('auto');
    if (handle.driver === 'postgres') {
      // No JIT compilation nor parallel workers on either pool (connect-postgres.ts, OLTP_SETTINGS).
      for (const db of [handle.db, handle.customPlanDb]) {
        const [settings] = await queryRows<{ jit: string; workers: string }>(
          db,
          sql`select current_setting('jit') as jit, current_setting('max_parallel_workers_per_gather') as workers`,
        );
        expect(settings).toEqual({ jit: 'off', workers: '0' });
      }
      expect(handle.customPlanDb).not.toBe(handle.db);
      expect(await mode(handle.customPlanDb)).toBe('force_custom_plan');
      expect(await names(handle.customPlanDb)).toEqual(await names(handle.db));
    } else {
      // PGlite runs one connection, whose statements are not kept prepared.
      expect(handle.customPlanDb).toBe(handle.db);
    }
  });

  it('plans a read generically for its transaction only (withGenericPlan), its statements sent with the setting', async () => {
    const mode = async (db: DbOrTx) =>
      (await queryRows<{ plan_cache_mode: string }>(db, sql`select current_setting('plan_cache_mode') as plan_cache_mode`))[0]?.plan_cache_mode;
    const outside = await mode(handle.customPlanDb);
    expect(await withGenericPlan(handle.customPlanDb, (tx) => mode(tx))).toBe('force_generic_plan');
    expect(await mode(handle.customPlanDb)).toBe(outside);
  });

  // PGlite runs one connection, with PostgreSQL's own choice of plans.
  it.skipIf(!process.env.TEST_DATABASE_URL)('keeps one plan per statement on the main pool when asked (genericPlans)', async () => {
    const generic = await createTestDatabase({ schema, migrationsFolder: initMigrations(), customPlanPoolSize: 1, genericPlans: true });
    try {
      const [row] = await queryRows<{ plan_cache_mode: string }>(generic.db, sql`select current_setting('plan_cache_mode') as plan_cache_mode`);
      expect(row?.plan_cache_mode).toBe('force_generic_plan');
      const [custom] = await queryRows<{ plan_cache_mode: string }>(generic.customPlanDb, sql`select current_setting('plan_cache_mode') as plan_cache_mode`);
      expect(custom?.plan_cache_mode).toBe('force_custom_plan');
    } finally {
      await generic.destroy();
    }
  });
});

describe('a page with its total (totalOfList, pageWithTotal)', () => {
  async function page(limit: number, offset: number) {
    let countedApart = 0;
    const rows = await handle.db
      .select({ row: { name: vehicles.name }, total: totalOfList() })
      .from(vehicles)
      .where(like(vehicles.plate, 'P-%'))
      .orderBy(asc(vehicles.id))
      .limit(limit)
      .offset(offset);
    const result = await pageWithTotal(
      rows,
      offset,
      async () => {
        countedApart += 1;
        const [counted] = await handle.db.select({ n: count() }).from(vehicles).where(like(vehicles.plate, 'P-%'));
        return counted?.n ?? 0;
      },
      ({ row }) => row,
    );
    return { ...result, countedApart };
  }

  it('answers the page without the total column, and the total of the filtered list, in one statement', async () => {
    await handle.db.insert(vehicles).values([1, 2, 3, 4, 5].map((i) => ({ name: `car ${i}`, plate: `P-${i}` })));
    await handle.db.insert(vehicles).values({ name: 'not listed', plate: 'Q-1' });
    expect(await page(2, 0)).toEqual({ rows: [{ name: 'car 1' }, { name: 'car 2' }], total: 5, countedApart: 0 });
    expect(await page(2, 4)).toEqual({ rows: [{ name: 'car 5' }], total: 5, countedApart: 0 });
  });

  it('counts apart for a page past the end, and answers 0 for an empty list without counting', async () => {
    expect(await page(2, 0)).toEqual({ rows: [], total: 0, countedApart: 0 });
    await handle.db.insert(vehicles).values([1, 2, 3].map((i) => ({ name: `car ${i}`, plate: `P-${i}` })));
    expect(await page(2, 6)).toEqual({ rows: [], total: 3, countedApart: 1 });
  });
});

describe('rows mapped by drizzle (patches/drizzle-orm@0.45.4.patch)', () => {
  it('decodes each column and each mapped SQL value, row after row, of a prepared query', async () => {
    await handle.db.insert(vehicles).values([1, 2, 3].map((i) => ({ name: `car ${i}`, plate: `P-${i}` })));
    const query = handle.db
      .select({ id: vehicles.id, name: vehicles.name, createdAt: vehicles.createdAt, half: sql`${vehicles.id}::numeric / 2`.mapWith(Number) })
      .from(vehicles)
      .where(like(vehicles.plate, sql.placeholder('plate')))
      .orderBy(asc(vehicles.id))
      .prepare('mapped_vehicles');
    for (const plate of ['P-%', 'P-2']) {
      const rows = await query.execute({ plate });
      expect(rows.map(({ id, name, half }) => ({ id, name, half }))).toEqual(
        (plate === 'P-%' ? [1, 2, 3] : [2]).map((id) => ({ id, name: `car ${id}`, half: id / 2 })),
      );
      for (const row of rows) expect(row.createdAt).toBeInstanceOf(Date);
    }
  });

  it('resolves the decoders of a select once per prepared query, not once per row', async () => {
    await handle.db.insert(vehicles).values([1, 2, 3].map((i) => ({ name: `car ${i}`, plate: `P-${i}` })));
    const decoder = { mapFromDriverValue: (value: unknown) => Number(value) };
    const doubled = sql<number>`${vehicles.id} * 2`.mapWith(decoder);
    let reads = 0;
    Object.defineProperty(doubled, 'decoder', {
      get: () => {
        reads += 1;
        return decoder;
      },
    });
    const query = handle.db.select({ doubled }).from(vehicles).orderBy(asc(vehicles.id)).prepare('decoded_once');
    expect(await query.execute()).toEqual([{ doubled: 2 }, { doubled: 4 }, { doubled: 6 }]);
    expect(await query.execute()).toEqual([{ doubled: 2 }, { doubled: 4 }, { doubled: 6 }]);
    expect(reads).toBe(1);
  });

  it('nests selected objects, and answers null for the table of a left join that matched nothing', async () => {
    const [withLog, withoutLog] = await handle.db
      .insert(vehicles)
      .values([
        { name: 'logged', plate: 'L-1' },
        { name: 'bare', plate: 'L-2' },
      ])
      .returning();
    await handle.db.insert(serviceLogs).values({ vehicleId: withLog!.id, note: 'Oil change' });
    const rows = await handle.db
      .select({ vehicle: { name: vehicles.name }, log: { id: serviceLogs.id, note: serviceLogs.note } })
      .from(vehicles)
      .leftJoin(serviceLogs, eq(serviceLogs.vehicleId, vehicles.id))
      .orderBy(asc(vehicles.id));
    expect(rows).toEqual([
      { vehicle: { name: 'logged' }, log: { id: expect.any(Number), note: 'Oil change' } },
      { vehicle: { name: 'bare' }, log: null },
    ]);
    expect(withoutLog!.name).toBe('bare');
    const whole = await handle.db.select().from(serviceLogs).innerJoin(vehicles, eq(vehicles.id, serviceLogs.vehicleId));
    expect(whole).toEqual([{ service_logs: expect.objectContaining({ note: 'Oil change' }), vehicles: expect.objectContaining({ name: 'logged' }) }]);
  });
});

describe('arrayLiteral', () => {
  it('binds a column of values as one parameter, quotes, backslashes, commas and braces kept', async () => {
    const texts = ['plain', 'say "hi"', 'back\\slash', 'a,b', '{x}', '', 'NULL'];
    const [row] = await queryRows<{ texts: string[]; ints: number[] }>(
      handle.db,
      sql`select ${arrayLiteral(texts)}::text[] as texts, ${arrayLiteral([3, -1, 0])}::int[] as ints`,
    );
    expect(row?.texts).toEqual(texts);
    expect(row?.ints).toEqual([3, -1, 0]);
    expect(arrayLiteral([])).toBe('{}');
  });
});

describe('queryRows', () => {
  it('answers plain row objects whichever driver ran the query', async () => {
    const rows = await queryRows<{ n: number; s: string; b: boolean; nothing: null }>(
      handle.db,
      sql`select 1::int as n, 'a'::text as s, true as b, null as nothing`,
    );
    expect(Array.isArray(rows)).toBe(true);
    expect(rows).toHaveLength(1);
    expect({ ...rows[0] }).toEqual({ n: 1, s: 'a', b: true, nothing: null });
  });

  it('answers several rows in order, and an empty array for none', async () => {
    const rows = await queryRows<{ n: number }>(handle.db, sql`select n::int from generate_series(1, 3) as n order by n`);
    expect(rows.map((r) => r.n)).toEqual([1, 2, 3]);
    expect(await queryRows(handle.db, sql`select 1 where false`)).toEqual([]);
  });

  it('binds parameters instead of splicing them into the SQL', async () => {
    const hostile = "x'); drop table vehicles; --";
    const rows = await queryRows<{ v: string }>(handle.db, sql`select ${hostile}::text as v`);
    expect(rows[0]!.v).toBe(hostile);
    expect(await names()).toEqual([]);
  });

  it('answers the rows of a statement with RETURNING, and works inside a transaction', async () => {
    const rows = await withTransaction(handle.db, (tx) =>
      queryRows<{ id: number; name: string }>(
        tx,
        sql`insert into vehicles (name, plate) values ('Mazda 3', 'M-3'), ('Mazda 6', 'M-6') returning id, name`,
      ),
    );
    expect(rows.map((r) => ({ ...r }))).toEqual([
      { id: 1, name: 'Mazda 3' },
      { id: 2, name: 'Mazda 6' },
    ]);
  });

  it('answers an empty array for a statement without rows', async () => {
    expect(await queryRows(handle.db, sql`update vehicles set name = 'x' where id = -1`)).toEqual([]);
  });
});

describe('withTransaction', () => {
  it('commits what the function wrote and answers its result', async () => {
    const result = await withTransaction(handle.db, async (tx) => {
      await tx.insert(vehicles).values({ name: 'Committed', plate: 'C-1' });
      return 'done';
    });
    expect(result).toBe('done');
    expect(await names()).toEqual(['Committed']);
  });

  it('rolls back everything when the function throws, and rethrows', async () => {
    const failure = new Error('payment declined');
    await expect(
      withTransaction(handle.db, async (tx) => {
        await tx.insert(vehicles).values({ name: 'Ghost', plate: 'G-1' });
        await tx.insert(vehicles).values({ name: 'Ghost 2', plate: 'G-2' });
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await names()).toEqual([]);
  });

  it('rolls back when a statement fails (a constraint violation)', async () => {
    await handle.db.insert(vehicles).values({ name: 'Existing', plate: 'DUP' });
    await expect(
      withTransaction(handle.db, async (tx) => {
        await tx.insert(vehicles).values({ name: 'New', plate: 'NEW' });
        await tx.insert(vehicles).values({ name: 'Duplicate', plate: 'DUP' });
      }),
    ).rejects.toThrow();
    expect(await names()).toEqual(['Existing']);
  });

  it('reuses the transaction it is given instead of opening another', async () => {
    await withTransaction(handle.db, async (outer) => {
      await withTransaction(outer, async (inner) => {
        expect(inner).toBe(outer);
        await inner.insert(vehicles).values({ name: 'Inner', plate: 'I-1' });
      });
      // The outer transaction sees the inner write: they are one and the same.
      expect(await names(outer)).toEqual(['Inner']);
    });
    expect(await names()).toEqual(['Inner']);
  });

  it('rolls back the inner work with the outer transaction', async () => {
    await expect(
      withTransaction(handle.db, async (outer) => {
        await withTransaction(outer, async (inner) => {
          await inner.insert(vehicles).values({ name: 'Inner', plate: 'I-1' });
        });
        await outer.insert(vehicles).values({ name: 'Outer', plate: 'O-1' });
        throw new Error('abort after both writes');
      }),
    ).rejects.toThrow('abort after both writes');
    expect(await names()).toEqual([]);
  });

  it('rolls back the whole transaction when the inner function throws', async () => {
    await expect(
      withTransaction(handle.db, async (outer) => {
        await outer.insert(vehicles).values({ name: 'Outer', plate: 'O-1' });
        await withTransaction(outer, async (inner) => {
          await inner.insert(vehicles).values({ name: 'Inner', plate: 'I-1' });
          throw new Error('inner failure');
        });
      }),
    ).rejects.toThrow('inner failure');
    expect(await names()).toEqual([]);
  });

  it('opens no savepoint: inner writes stay when the outer transaction catches and commits', async () => {
    await withTransaction(handle.db, async (outer) => {
      await withTransaction(outer, async (inner) => {
        await inner.insert(vehicles).values({ name: 'Kept', plate: 'K-1' });
        throw new Error('caught below');
      }).catch(() => undefined);
    });
    expect(await names()).toEqual(['Kept']);
  });

  it('lets the function roll back explicitly', async () => {
    await expect(
      withTransaction(handle.db, async (tx) => {
        await tx.insert(vehicles).values({ name: 'Undone', plate: 'U-1' });
        (tx as { rollback(): never }).rollback();
      }),
    ).rejects.toThrow(/rollback/i);
    expect(await names()).toEqual([]);
  });
});

describe('escapeLike in a query', () => {
  const search = async (term: string) =>
    (
      await handle.db
        .select({ name: vehicles.name })
        .from(vehicles)
        .where(ilike(vehicles.name, `%${escapeLike(term)}%`))
    )
      .map((r) => r.name)
      // Sorted here: the server's collation may order mixed case and punctuation differently.
      .sort();

  beforeEach(async () => {
    await handle.db.insert(vehicles).values([
      { name: 'Winter deal 50%_OFF\\ today', plate: 'P-1' },
      { name: 'Winter deal 50% off', plate: 'P-2' },
      { name: 'Winter deal 500 off', plate: 'P-3' },
      { name: 'Winter deal 50X_OFFY', plate: 'P-4' },
      { name: 'under_score', plate: 'P-5' },
      { name: 'underXscore', plate: 'P-6' },
    ]);
  });

  it('matches %, _ and \\ literally, case-insensitively', async () => {
    expect(await search('50%_off\\')).toEqual(['Winter deal 50%_OFF\\ today']);
    expect(await search('50%')).toEqual(['Winter deal 50% off', 'Winter deal 50%_OFF\\ today']);
    expect(await search('under_score')).toEqual(['under_score']);
    expect(await search('\\')).toEqual(['Winter deal 50%_OFF\\ today']);
  });

  it('is needed: the same text unescaped matches far more', async () => {
    const unescaped = await handle.db
      .select({ name: vehicles.name })
      .from(vehicles)
      .where(ilike(vehicles.name, '%50%_off%'));
    expect(unescaped.length).toBeGreaterThan(1);
    const wildcard = await handle.db.select({ name: vehicles.name }).from(vehicles).where(ilike(vehicles.name, '%under_score%'));
    expect(wildcard).toHaveLength(2);
  });

  it('works in raw SQL through queryRows too', async () => {
    const rows = await queryRows<{ name: string }>(
      handle.db,
      sql`select name from vehicles where name ilike ${`%${escapeLike('_')}%`}`,
    );
    expect(rows.map((r) => r.name).sort()).toEqual(['Winter deal 50%_OFF\\ today', 'Winter deal 50X_OFFY', 'under_score']);
  });
});

describe('executeCount', () => {
  it('answers the rows a statement wrote, on either driver', async () => {
    await handle.db.insert(vehicles).values([{ name: 'A', plate: 'A-1' }, { name: 'B', plate: 'B-1' }, { name: 'C', plate: 'C-1' }]);
    expect(await executeCount(handle.db, sql`update ${vehicles} set name = name || '!' where plate <> 'C-1'`)).toBe(2);
    expect(await executeCount(handle.db, sql`insert into ${vehicles} (name, plate) select 'D', 'D-1' where false`)).toBe(0);
    expect(await executeCount(handle.db, sql`delete from ${vehicles}`)).toBe(3);
  });
});

describe('copyText', () => {
  const plates = async () => (await handle.db.select({ plate: vehicles.plate }).from(vehicles).orderBy(asc(vehicles.id))).map((r) => r.plate);
  /** Rows of (name, plate) in COPY's text format (no value here needs escaping). */
  const lines = (rows: string[][]) => rows.map((row) => `${row.join('\t')}\n`).join('');

  it('appends rows with COPY on PostgreSQL, the text read as COPY reads it; answers false elsewhere', async () => {
    // Escapes as the caller writes them: a tab, a newline, a backslash, and a backslash before N
    // (which unescaped would be COPY's null).
    const text = 'tab\\there\tP-0\nline\\nbreak\tP-1\nback\\\\slash\tP-2\n\\\\N\tP-3\n';
    const copied = await copyText(handle.db, 'vehicles', ['name', 'plate'], text);
    expect(copied).toBe(handle.driver === 'postgres');
    expect(await names()).toEqual(copied ? ['tab\there', 'line\nbreak', 'back\\slash', String.raw`\N`] : []);
  });

  it('is all or nothing: a duplicate fails the COPY with its error, and the pool goes on', async () => {
    if (handle.driver !== 'postgres') return;
    await handle.db.insert(vehicles).values({ name: 'first', plate: 'DUP-1' });
    const failed = copyText(handle.db, 'vehicles', ['name', 'plate'], lines([['a', 'NEW-1'], ['b', 'DUP-1']]));
    await expect(failed).rejects.toSatisfy((error) => sqlState(error) === '23505');
    expect(await plates()).toEqual(['DUP-1']);
    // Other queries run meanwhile on the pool and do not land amid a COPY's data.
    const rows = Array.from({ length: 5_000 }, (_, i) => [`car ${i}`, `C-${i}`]);
    const [copied, counts] = await Promise.all([
      copyText(handle.db, 'vehicles', ['name', 'plate'], lines(rows)),
      Promise.all(Array.from({ length: 20 }, () => queryRows(handle.db, sql`select count(*) from ${vehicles}`))),
    ]);
    expect(copied).toBe(true);
    expect(counts).toHaveLength(20);
    expect((await plates()).length).toBe(5_001);
  });

  it('answers false inside a transaction, which writes with INSERT instead', async () => {
    const answered = await withTransaction(handle.db, (tx) => copyText(tx, 'vehicles', ['name', 'plate'], lines([['x', 'TX-1']])));
    expect(answered).toBe(false);
    expect(await plates()).toEqual([]);
  });
});
