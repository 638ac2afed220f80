import type { Database, DbOrTx, Transaction } from './types.js';

/**
 * Runs `fn` in a transaction, reusing the caller's when it already holds one, so that a service can
 * compose repository calls without caring who opened the transaction.
 */
export async function withTransaction<S extends Record<string, unknown>, T>(
  db: DbOrTx<S>,
  fn: (tx: DbOrTx<S>) => Promise<T>,
): Promise<T> {
  if (isTransaction(db)) return fn(db);
  return (db as Database<S>).transaction((tx) => fn(tx as Transaction<S>));
}

function isTransaction(db: DbOrTx): db is Transaction {
  return typeof (db as { rollback?: unknown }).rollback === 'function';
}
