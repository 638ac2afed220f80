import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';

// One type for both drivers: repositories and services never know which one runs.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Database<S extends Record<string, unknown> = Record<string, any>> = PgDatabase<PgQueryResultHKT, S>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Transaction<S extends Record<string, unknown> = Record<string, any>> = PgTransaction<PgQueryResultHKT, S>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type DbOrTx<S extends Record<string, unknown> = Record<string, any>> = Database<S> | Transaction<S>;
