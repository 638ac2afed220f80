import { lt, lte, type SQL } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';

/** An upper time bound: a date alone covers its whole day (UTC), so it is exclusive from the next midnight. */
export interface UpperBound {
  at: Date;
  inclusive: boolean;
}

/** `column <= at` or `column < at`: the filter of every "up to" query parameter. */
export function beforeBound(column: AnyPgColumn, bound: UpperBound): SQL {
  return bound.inclusive ? lte(column, bound.at) : lt(column, bound.at);
}
