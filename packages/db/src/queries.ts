import { sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from './types.js';

/**
 * A query on the common path, built and prepared once per database (Drizzle's `.prepare()` with
 * `sql.placeholder`s), then executed with its values: composing a query costs more in Drizzle
 * than running it on a warm connection. `build` must take every value through a placeholder.
 * A transaction gets a copy of its own, built on its first use there.
 */
export function preparedOnce<Q>(build: (db: DbOrTx) => Q): (db: DbOrTx) => Q {
  const cache = new WeakMap<DbOrTx, Q>();
  return (db) => {
    let query = cache.get(db);
    if (query === undefined) {
      query = build(db);
      cache.set(db, query);
    }
    return query;
  };
}

/**
 * The size of the whole filtered list on each row of a page (a window counted before `LIMIT`):
 * select it beside a small list's columns, as `total`, and hand the rows to `pageWithTotal`. The
 * page and its total then take one statement instead of two, saving a round trip on every list
 * request. The window reads every row the filter matches, so it is for lists of tens or hundreds
 * of rows (a user's own), never for a table's worth, which a separate count (or an estimate) serves.
 */
export function totalOfList() {
  return sql<number>`(count(*) over ())::int`;
}

/**
 * A page selected with `total: totalOfList()`: its items (`item` of each row), and the list's
 * total. Select the columns nested (`{ row: getTableColumns(t), total }`) and take `({ row }) =>
 * row`: copying each row without `total` instead (an object rest) cost 2.5 µs for three rows of
 * fourteen columns. A page past the end has no row to carry the total: `countApart` counts it then.
 */
export async function pageWithTotal<R extends { total: number }, T>(
  rows: R[],
  offset: number,
  countApart: () => Promise<number>,
  item: (row: R) => T,
): Promise<{ rows: T[]; total: number }> {
  const [first] = rows;
  if (first === undefined) return { rows: [], total: offset > 0 ? await countApart() : 0 };
  return { rows: rows.map(item), total: first.total };
}

/** Rows of a raw query, whichever driver ran it (PGlite answers `{ rows }`, postgres.js an array). */
export async function queryRows<T extends Record<string, unknown>>(db: DbOrTx, query: SQL): Promise<T[]> {
  const result = (await db.execute(query)) as unknown;
  if (Array.isArray(result)) return result as T[];
  return ((result as { rows?: T[] }).rows ?? []) as T[];
}

/**
 * Rows a raw statement wrote (an INSERT, UPDATE or DELETE without RETURNING), whichever driver ran
 * it: postgres.js answers the command's count on its result, PGlite `affectedRows`.
 */
export async function executeCount(db: DbOrTx, query: SQL): Promise<number> {
  const result = (await db.execute(query)) as unknown as { count?: number | null; affectedRows?: number };
  return Number(result.count ?? result.affectedRows ?? 0);
}

/**
 * An instant as a raw-SQL parameter. Raw `sql` does not map a Date through a column type, and
 * postgres.js fails on a Date object where PGlite accepts one; ISO text with a cast works on both.
 */
export function timestamptz(date: Date): SQL {
  return sql`${date.toISOString()}::timestamptz`;
}

/** The SQLSTATE of a database error, whichever driver raised it, looking through the query builder's wrapper. */
export function sqlState(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

/**
 * A PostgreSQL array literal (`{1,2}`, `{"a","b\\"c"}`), to bind a whole column of values as one
 * parameter, cast where it is used (`any($1::int[])`, `unnest($1::text[], …)`): thousands of rows
 * cost one bind, not one per value.
 */
export function arrayLiteral(values: readonly (string | number)[]): string {
  return `{${values.map((v) => (typeof v === 'number' ? String(v) : `"${v.replace(/[\\"]/g, '\\$&')}"`)).join(',')}}`;
}

/** Escapes `%`, `_` and `\` so that user text is matched literally inside LIKE/ILIKE patterns. */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}
