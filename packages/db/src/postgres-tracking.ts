import type postgres from 'postgres';
import { asUnavailable, createCircuit, DatabaseUnavailableError, type Circuit } from './faults.js';

/** Counts a pool's queries in flight; its settle functions are shared by every query (no closure per query). */
export interface InFlight {
  count: number;
  /** Whether the pool's server answers (see Circuit): every settled query tells it. */
  circuit: Circuit;
  resolve(this: TrackedQuery, value: unknown): void;
  reject(this: TrackedQuery, error: unknown): void;
}

interface TrackedQuery {
  resolve(value: unknown): void;
  reject(error: unknown): void;
  untracked?: { resolve(value: unknown): void; reject(error: unknown): void } | null;
}

export function inFlightCounter(): InFlight {
  const circuit = createCircuit();
  const counter: InFlight = {
    count: 0,
    circuit,
    resolve(value) {
      const own = this.untracked;
      if (!own) return;
      this.untracked = null;
      counter.count -= 1;
      circuit.succeeded();
      own.resolve(value);
    },
    reject(error) {
      const own = this.untracked;
      if (!own) return;
      this.untracked = null;
      counter.count -= 1;
      circuit.failed(error);
      // A lost connection fails the query as the outage it is (503), not as a bug (500).
      own.reject(asUnavailable(error));
    },
  };
  return counter;
}

/** A postgres.js query counted in flight until it settles (postgres.js settles it through `query.resolve`/`query.reject`). */
function track<Q>(query: Q, counter: InFlight): Q {
  const q = query as unknown as TrackedQuery;
  q.untracked = { resolve: q.resolve, reject: q.reject };
  q.resolve = counter.resolve;
  q.reject = counter.reject;
  counter.count += 1;
  return query;
}

/**
 * The client with every statement that has parameters prepared (named, kept per connection): Drizzle
 * runs its queries unprepared, and postgres.js then needs a round trip to learn the parameter
 * types before each execution. Prepared, a statement costs one round trip, and PostgreSQL parses
 * it once per connection. Plans stay custom (plan_cache_mode above). The cache lives as long as
 * its connection, which postgres.js replaces after 30 to 60 minutes (max_lifetime).
 */
export function preparing(client: postgres.Sql, inFlight: InFlight, pool = true): postgres.Sql {
  const { circuit } = inFlight;
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property === 'unsafe') {
        return (query: string, params?: unknown[], options?: postgres.UnsafeQueryOptions) => {
          // On the pool, not inside a transaction, which holds a connection of its own already.
          if (pool && !circuit.admit()) return refusedQuery();
          return track(target.unsafe(query, params as never, { ...options, prepare: true }), inFlight);
        };
      }
      if (property === 'begin') {
        return (...args: unknown[]) => {
          if (!circuit.admit()) return Promise.reject(new DatabaseUnavailableError());
          const callback = args.pop() as (tx: postgres.TransactionSql) => unknown;
          const begun = (target.begin as (...a: unknown[]) => Promise<unknown>)(...args, (tx: postgres.TransactionSql) =>
            callback(preparing(tx as unknown as postgres.Sql, inFlight, false) as unknown as postgres.TransactionSql),
          );
          // BEGIN or COMMIT on a connection that is gone: the transaction did not happen, or its
          // outcome is unknown; either way an outage.
          return begun.then(
            (result) => {
              circuit.succeeded();
              return result;
            },
            (error: unknown) => {
              circuit.failed(error);
              throw asUnavailable(error);
            },
          );
        };
      }
      return Reflect.get(target, property, receiver) as unknown;
    },
  });
}

/**
 * A query refused before it was sent (the server is down, see Circuit), shaped as Drizzle uses a
 * postgres.js query: awaited, or read through `values()`.
 */
function refusedQuery(): never {
  const refused = Promise.reject(new DatabaseUnavailableError());
  return Object.assign(refused, { values: () => refused, execute: () => refused, cancel: () => undefined }) as never;
}
