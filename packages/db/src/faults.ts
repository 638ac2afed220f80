/**
 * Telling a database that cannot be reached from a query that failed: the first is an outage the
 * client should retry after a moment (503 with Retry-After), the second a bug or a bad request.
 */

/** Socket-level failures (Node's codes) and postgres.js' own connection errors. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  // No server of a multi-host URL matched target_session_attrs (a failover under way: the old
  // primary gone, the standby not yet promoted), and no connection came within the acquire bound.
  'TARGET_SESSION_ATTRS_UNMET',
  'ACQUIRE_TIMEOUT',
]);

/**
 * SQLSTATEs of a server that is going away or full: 57P01 admin_shutdown, 57P02 crash_shutdown,
 * 57P03 cannot_connect_now (starting up, shutting down), 53300 too_many_connections; class 08 is
 * every connection exception. 25006 read_only_sql_transaction: a write reached a standby (a primary
 * demoted by a failover, or a URL without target_session_attrs); the driver closes that connection
 * once idle (patches/postgres@3.4.9.patch), and the retry finds the new primary.
 */
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300', '25006']);

/**
 * Failures to open a connection, as opposed to losing one that was open: the server is down,
 * unreachable, starting up or shutting down, or full.
 */
const CONNECT_FAILURES = new Set([
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'CONNECT_TIMEOUT',
  'TARGET_SESSION_ATTRS_UNMET',
  'ACQUIRE_TIMEOUT',
  '25006',
  '57P03',
  '53300',
  '08001',
  '08004',
]);

/** How long a request waits for a connection while none can be opened (DATABASE_ACQUIRE_TIMEOUT_MS). */
export const ACQUIRE_TIMEOUT_MS = 2000;

/** The failure of a query that got no connection within the acquire bound (see InFlight). */
export function acquireTimeout(ms: number): Error {
  return Object.assign(new Error(`no connection to a writable server within ${ms} ms`), { code: 'ACQUIRE_TIMEOUT' });
}

/** How long a client is asked to wait before retrying (Retry-After, seconds). */
export const RETRY_AFTER_SECONDS = 1;

/**
 * Whether `error` (or an error it was caused by: Drizzle wraps the driver's) says the database
 * could not be reached or dropped the connection, rather than refusing the statement.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof DatabaseUnavailableError) return true;
    const code = (e as { code?: unknown }).code;
    if (typeof code !== 'string') continue;
    if (CONNECTION_CODES.has(code) || UNAVAILABLE_STATES.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return true;
  }
  return false;
}

/**
 * The database could not be reached, or lost the connection a statement ran on. It declares the
 * HTTP status it means (`statusCode`, as Fastify's errors do), so the shared error handler answers
 * 503 with Retry-After without knowing about databases; the driver's error is its `cause` (with
 * its code and SQLSTATE, never its parameters). A statement whose connection dropped after it was
 * sent may still have committed: a client retrying a write must be able to tell (docs/operations.md, database outages).
 */
export class DatabaseUnavailableError extends Error {
  readonly statusCode = 503;
  readonly retryAfter = RETRY_AFTER_SECONDS;
  readonly code: string;

  /** Without a cause: refused before it was sent, a connection attempt having just failed (see Circuit). */
  constructor(cause?: unknown) {
    const code = (cause as { code?: unknown } | undefined)?.code;
    const why = typeof code === 'string' ? ` (${code})` : cause === undefined ? ' (not sent: the server could not be reached a moment ago)' : '';
    super(`database unavailable${why}`, cause === undefined ? undefined : { cause });
    this.name = 'DatabaseUnavailableError';
    this.code = typeof code === 'string' ? code : 'DATABASE_UNAVAILABLE';
  }
}

/** `error` as a DatabaseUnavailableError when it is a connection-level failure, else unchanged. */
export function asUnavailable(error: unknown): unknown {
  if (error instanceof DatabaseUnavailableError || !isDatabaseUnavailable(error)) return error;
  return new DatabaseUnavailableError(error);
}

/**
 * postgres.js options that keep an outage short for the callers:
 * - `connect_timeout`: a connection attempt to a server that does not answer (a host gone, packets
 *   dropped) fails after this many seconds, not postgres.js' default 30.
 * - `backoff`: postgres.js waits before reconnecting a connection that closed on an error, and
 *   grows the wait with every failure of the pool (3^n / 100 s, up to 20 s): the queries queued
 *   behind it waited as long (19 s were measured) and the pool came back as late after the
 *   server did. A refused connection costs the server nothing, so the wait stays under a second.
 * - `keep_alive`: a TCP keep-alive probe on a connection idle this many seconds, and as often while
 *   it stays idle, so that a NAT or a firewall between the app and the server (which drop a
 *   connection idle 4 to 10 minutes, silently) sees it alive. A server gone without a word (its
 *   host lost) is found by the probes only after the kernel's retries (Node 20 sets the first
 *   delay alone: with Linux's defaults, 60 s + 9 × 75 s, about 12 minutes); a request that reaches
 *   such a connection first waits on it, as it did on one idle under two minutes before.
 * - `idle_timeout`: a connection idle this long is closed. A new one costs its first statements far
 *   more than a used one: the server reads the catalogue of every daily partition and index a
 *   statement touches, and plans each statement anew (a search of 4 million logs took 260 ms on a
 *   new connection against 10–18 on a used one, a first page 77 against 4–5). Two minutes closed
 *   them between the searches of someone reading logs; ten, as connection pools commonly keep them
 *   (PgBouncer's `server_idle_timeout`), keep them through such pauses.
 */
export const OUTAGE_OPTIONS = {
  connect_timeout: 1.5,
  backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 0.5),
  keep_alive: 60,
  idle_timeout: 600,
} as const;

function isConnectFailure(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && CONNECT_FAILURES.has(code)) return true;
  }
  return false;
}

/**
 * Whether a pool takes new work while its server cannot be reached. postgres.js queues every query
 * and transaction that finds no open connection, and fails them one per failed connection attempt:
 * under load the queue grows faster than it fails, and requests waited for the whole outage (a
 * transaction for 3 s of a 3 s outage). Once a connection attempt has failed, new work is refused
 * at once (503), except one piece every `probeMs`, whose outcome says whether the server is back.
 */
export interface Circuit {
  /** Whether new work may be sent: always while the server answers; one probe every `probeMs` while it does not. */
  admit(): boolean;
  /** A query or transaction failed: a failed connection attempt opens the circuit. */
  failed(error: unknown): void;
  /** A query or transaction succeeded: the server is back. */
  succeeded(): void;
  readonly open: boolean;
  /** When a connection attempt last failed (performance.now()), or 0. */
  readonly failedAt: number;
}

export function createCircuit(probeMs = 250): Circuit {
  let down = false;
  let lastProbe = 0;
  let failedAt = 0;
  return {
    admit() {
      if (!down) return true;
      const now = performance.now();
      if (now - lastProbe < probeMs) return false;
      lastProbe = now;
      return true;
    },
    failed(error) {
      if (!isConnectFailure(error)) return;
      down = true;
      failedAt = performance.now();
    },
    succeeded() {
      down = false;
    },
    get open() {
      return down;
    },
    get failedAt() {
      return failedAt;
    },
  };
}
