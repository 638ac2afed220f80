import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * postgres.js finds a query's prepared statement by a key of its parameter types and its text. As
 * released (3.4.9) it concatenates that key anew on every execution, so a long text (Drizzle's,
 * fully qualified) is copied and hashed on every query: about 2 µs of an 800-character one.
 * patches/postgres@3.4.9.patch builds each key once per text and types (at most 2 000 texts, then
 * forgotten). These check that the installed copy is the patched one, and that statements are
 * still found, kept apart by their types, and reused across the bound.
 */
describe('the key of a prepared statement (patched)', () => {
  it('is built once per text and types in the installed postgres.js', () => {
    const entry = createRequire(import.meta.url).resolve('postgres');
    const esm = readFileSync(entry.replace(/cjs[\\/]src[\\/]index\.js$/, 'src/connection.js'), 'utf8');
    const cjs = readFileSync(entry.replace(/index\.js$/, 'connection.js'), 'utf8');
    for (const source of [esm, cjs]) {
      expect(source).toContain('q.signature = q.prepare && signatureOf(types, string)');
      expect(source).not.toContain('types + string');
    }
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('prepared statements on a PostgreSQL server', () => {
  // One connection, so that every statement it prepared is in its pg_prepared_statements.
  let sql: postgres.Sql;

  beforeAll(() => {
    sql = postgres(process.env.TEST_DATABASE_URL as string, { max: 1, onnotice: () => {} });
  });

  afterAll(async () => {
    await sql?.end({ timeout: 5 });
  });

  const preparedCount = async (text: string) => {
    const [row] = await sql`select count(*)::int as n from pg_prepared_statements where statement = ${text}`;
    return (row as { n: number }).n;
  };

  it('prepares a text once and reuses it, after more texts than the keys kept', async () => {
    const text = 'select $1::int + 1 as answer /* statement reuse */';
    expect(await sql.unsafe(text, [41], { prepare: true })).toEqual([{ answer: 42 }]);
    expect(await sql.unsafe(text, [1], { prepare: true })).toEqual([{ answer: 2 }]);
    expect(await preparedCount(text)).toBe(1);
    // More distinct texts than the patch keeps keys for: its map is cleared on the way.
    for (let i = 0; i < 2_100; i++) await sql.unsafe(`select $1::int + ${i} as n`, [i], { prepare: true });
    expect(await sql.unsafe(text, [9], { prepare: true })).toEqual([{ answer: 10 }]);
    expect(await preparedCount(text)).toBe(1);
  }, 60_000);

  it('keeps statements of one text with different parameter types apart', async () => {
    // postgres.js sends a string untyped and a boolean as bool: one text, two statements.
    const text = 'select ($1)::text as v /* types apart */';
    expect(await sql.unsafe(text, ['x'], { prepare: true })).toEqual([{ v: 'x' }]);
    expect(await sql.unsafe(text, [true], { prepare: true })).toEqual([{ v: 'true' }]);
    expect(await sql.unsafe(text, ['y'], { prepare: true })).toEqual([{ v: 'y' }]);
    expect(await sql.unsafe(text, [false], { prepare: true })).toEqual([{ v: 'false' }]);
    expect(await preparedCount(text)).toBe(2);
  });
});
