import type postgres from 'postgres';
import { ACQUIRE_TIMEOUT_MS, acquireTimeout, asUnavailable, createCircuit, DatabaseUnavailableError, type Circuit } from './faults.js';

/** Counts a pool's queries in flight; its settle functions are shared by every query (no closure per query). */
export interface InFlight {
  count: number;
  /** Whether the pool's server answers (see Circuit): every settled query tells it. */
  circuit: Circuit;
  /** How long a query may wait for a connection while none can be opened. */
  acquireTimeoutMs: number;
  /** Watches a query sent to the pool until it is on a connection (see the sweep in inFlightCounter). */
  waitForConnection(query: Waiter): void;
  /** The query is on a connection: no longer watched, so nothing it holds outlives it in the watch list. */
  connected(query: Waiter): void;
  resolve(this: TrackedQuery, value: unknown): void;
  reject(this: TrackedQuery, error: unknown): void;
}

/** A query, or a transaction's BEGIN, waiting for a connection. */
interface Waiter {
  /** Set by postgres.js once the query is written to a connection. */
  state?: unknown;
  queuedAt?: number;
  /** Cancelled by the sweep: it got no connection within the bound. */
  expired?: boolean;
  /** Drops it without sending it (postgres.js' cancel of a query not yet sent). */
  cancel(): unknown;
}

interface TrackedQuery extends Waiter {
  resolve(value: unknown): void;
  reject(error: unknown): void;
  untracked?: { resolve(value: unknown): void; reject(error: unknown): void } | null;
}

/**
 * The queries that succeeded on any pool of one server, ever: each pool's sweep reads it (see
 * inFlightCounter), so that a pool stuck behind its own slow statements is not taken for a server
 * that cannot be reached while another pool of the same server is answered.
 */
export interface ServerAnswers {
  succeeded: number;
  /**
   * Asks the server whether it answers, on a connection of its own (`select 1`), settling within
   * the time given: started by a pool's sweep when queries have waited half the bound while no
   * query of the server succeeded (every connection of every pool busy, or none to be had), one
   * at a time. An answer counts as a success: the server is slow, not gone, and the queues wait.
   */
  probe?: (withinMs: number) => Promise<unknown>;
  probing?: boolean;
}

export function inFlightCounter(acquireTimeoutMs = ACQUIRE_TIMEOUT_MS, server: ServerAnswers = { succeeded: 0 }): InFlight {
  const circuit = createCircuit();
  const waiting = new Set<Waiter>();
  let sweeping: NodeJS.Timeout | null = null;
  let succeededSeen = 0;
  let lastSuccessAt = 0;
  /**
   * While the driver goes through the hosts of the URL looking for a writable primary (a failover),
   * queries wait for a connection: each attempt fails one of them at most, so the rest waited as long
   * as the failover (20 s were measured). A query still without a connection after the bound, when
   * no query of any pool of the server has succeeded for as long (`server`) or a connection attempt
   * of this pool failed while it waited, is cancelled (it is never sent) and fails as unavailable
   * (503), which opens the circuit. A pool merely busy keeps succeeding and opens no connection in
   * vain: its queue waits. So does a pool whose every connection is busy with a slow statement for
   * longer than the bound while the server answers its other pool: a new instance under load, its
   * searches' pool held for seconds by a large project's first searches, answered 503 to the reads
   * waiting behind them and refused the next ones at once (the circuit open), where its writes' pool
   * was answered all along. (Successes alone do not say the server is well:
   * a primary whose postmaster was killed keeps serving the connections it had while no new one
   * can be opened; the failed attempts say it.) Nor does the lack of them say it is gone: every
   * connection of every pool can be busy for longer than the bound (a new instance under load, the
   * first searches of a project of millions of logs taking seconds each); the 503s then fell on
   * the reads of the soak's warm-up again. So a query that has waited half the bound while nothing
   * succeeded has the server probed (`server.probe`), and an answer within the other half keeps the
   * queues waiting; a lost host, a failover, a refused connection do not answer it, and the bound
   * fails the queries as before. A query that reaches the bound while the probe is out waits for
   * its outcome (half the bound at most): on a loaded machine the probe's new connection took
   * longer than what was left of the bound, and the query failed while the server was answering.
   */
  const sweep = () => {
    sweeping = null;
    const now = performance.now();
    if (server.succeeded !== succeededSeen) {
      succeededSeen = server.succeeded;
      lastSuccessAt = now;
    }
    const half = acquireTimeoutMs / 2;
    // A probe still out when queries reach the bound is waited for: it settles within half the
    // bound, and an answer says the server is slow, not gone. A probe that failed lets them fail.
    for (const q of waiting) {
      if (q.state) waiting.delete(q);
      else if (
        now - (q.queuedAt ?? now) >= acquireTimeoutMs &&
        (circuit.failedAt >= (q.queuedAt ?? now) || (now - lastSuccessAt >= acquireTimeoutMs && !server.probing))
      ) {
        waiting.delete(q);
        q.expired = true;
        circuit.failed(acquireTimeout(acquireTimeoutMs));
        q.cancel();
      }
    }
    if (server.probe && !server.probing && now - lastSuccessAt >= half && circuit.failedAt <= lastSuccessAt) {
      for (const q of waiting) {
        if (q.state || now - (q.queuedAt ?? now) < half) continue;
        server.probing = true;
        server
          .probe(half)
          .then(
            () => (server.succeeded += 1),
            () => undefined,
          )
          .finally(() => (server.probing = false));
        break;
      }
    }
    if (waiting.size > 0) sweeping = setTimeout(sweep, Math.max(25, acquireTimeoutMs / 4)).unref();
  };
  const counter: InFlight = {
    count: 0,
    circuit,
    acquireTimeoutMs,
    waitForConnection(query) {
      query.queuedAt = performance.now();
      waiting.add(query);
      sweeping ??= setTimeout(sweep, Math.max(25, acquireTimeoutMs / 4)).unref();
    },
    connected(query) {
      query.state = true;
      waiting.delete(query);
    },
    resolve(value) {
      const own = this.untracked;
      if (!own) return;
      this.untracked = null;
      counter.count -= 1;
      server.succeeded += 1;
      if (this.queuedAt !== undefined) waiting.delete(this);
      circuit.succeeded();
      own.resolve(value);
    },
    reject(error) {
      const own = this.untracked;
      if (!own) return;
      this.untracked = null;
      counter.count -= 1;
      if (this.queuedAt !== undefined) waiting.delete(this);
      const cause = this.expired ? acquireTimeout(acquireTimeoutMs) : error;
      circuit.failed(cause);
      // A lost connection fails the query as the outage it is (503), not as a bug (500).
      own.reject(asUnavailable(cause));
    },
  };
  return counter;
}

/** A postgres.js query counted in flight until it settles (postgres.js settles it through `query.resolve`/`query.reject`). */
function track<Q>(query: Q, counter: InFlight, bounded: boolean): Q {
  const q = query as unknown as TrackedQuery;
  q.untracked = { resolve: q.resolve, reject: q.reject };
  q.resolve = counter.resolve;
  q.reject = counter.reject;
  counter.count += 1;
  if (bounded) counter.waitForConnection(q);
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
          return track(target.unsafe(query, params as never, { ...options, prepare: true }), inFlight, pool);
        };
      }
      if (property === 'begin') {
        return (...args: unknown[]) => {
          if (!circuit.admit()) return Promise.reject(new DatabaseUnavailableError());
          const callback = args.pop() as (tx: postgres.TransactionSql) => unknown;
          return new Promise((resolve, reject) => {
            // The BEGIN waits for a connection under the same bound as a query: past it the caller
            // is answered unavailable, and should the connection come later, the transaction's work
            // never runs (it rolls back at once), so a write answered 503 is never made.
            const waiter: Waiter = {
              cancel() {
                reject(new DatabaseUnavailableError(acquireTimeout(inFlight.acquireTimeoutMs)));
              },
            };
            if (pool) inFlight.waitForConnection(waiter);
            const begun = (target.begin as (...a: unknown[]) => Promise<unknown>)(...args, (tx: postgres.TransactionSql) => {
              if (waiter.expired) throw new DatabaseUnavailableError(acquireTimeout(inFlight.acquireTimeoutMs));
              inFlight.connected(waiter);
              return callback(preparing(tx as unknown as postgres.Sql, inFlight, false) as unknown as postgres.TransactionSql);
            });
            // BEGIN or COMMIT on a connection that is gone: the transaction did not happen, or its
            // outcome is unknown; either way an outage.
            begun.then(
              (result) => {
                inFlight.connected(waiter);
                circuit.succeeded();
                resolve(result);
              },
              (error: unknown) => {
                inFlight.connected(waiter);
                if (waiter.expired) return;
                circuit.failed(error);
                reject(asUnavailable(error));
              },
            );
          });
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
