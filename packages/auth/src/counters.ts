import { createRequestCounter, purgeExpiredCounters, rateLimitCounters, type DbOrTx, type RequestCounter } from '@repo/db';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { RateLimiterDrizzle, RateLimiterRedis, type RateLimiterStoreAbstract } from 'rate-limiter-flexible';

/** A key's count and how long it stays. */
export interface Count {
  count: number;
  msLeft: number;
}

/** Counts per key, each in a window of its own: what the throttles keep, in memory or shared. */
export interface CounterStore {
  /** Adds one to the key's count in a fixed window of `windowMs` from its first hit. */
  hit(key: string, windowMs: number): Promise<Count>;
  /** The key's count while its window lasts, else undefined. */
  get(key: string): Promise<Count | undefined>;
  /** Sets the key's count, kept `ms` from now. */
  set(key: string, count: number, ms: number): Promise<void>;
  delete(key: string): Promise<void>;
  /** Keys held now (the memory store only: for tests of its bound). */
  size?(): number;
}

/** A store per namespace (`login_pair`, `email_send` …): the namespaces never share a key. */
export type CounterSource = (namespace: string) => CounterStore;

interface Entry {
  count: number;
  expiresAt: number;
}

/**
 * Counters in this process's memory: one instance alone (an app on PGlite, the unit tests, which
 * move the clock). Each namespace keeps at most `maxKeys` keys; a write moves its key to the end of
 * the Map (which keeps insertion order), and past the bound the oldest go first.
 */
export function memoryCounters(options: { now?: () => number; maxKeys?: number } = {}): CounterSource {
  const now = options.now ?? Date.now;
  const maxKeys = options.maxKeys ?? 50_000;
  return () => {
    const entries = new Map<string, Entry>();
    const put = (key: string, entry: Entry) => {
      entries.delete(key);
      entries.set(key, entry);
      while (entries.size > maxKeys) {
        const oldest = entries.keys().next().value;
        if (oldest === undefined) break;
        entries.delete(oldest);
      }
    };
    const live = (key: string, t: number) => {
      const entry = entries.get(key);
      return entry && entry.expiresAt > t ? entry : undefined;
    };
    return {
      async hit(key, windowMs) {
        const t = now();
        // Under a flood of keys, the expired ones are swept before the bound drops live ones.
        if (entries.size >= 10_000) for (const [k, e] of entries) if (e.expiresAt <= t) entries.delete(k);
        const entry = live(key, t);
        const next = entry ? { count: entry.count + 1, expiresAt: entry.expiresAt } : { count: 1, expiresAt: t + windowMs };
        put(key, next);
        return { count: next.count, msLeft: next.expiresAt - t };
      },
      async get(key) {
        const t = now();
        const entry = live(key, t);
        return entry ? { count: entry.count, msLeft: entry.expiresAt - t } : undefined;
      },
      async set(key, count, ms) {
        put(key, { count, expiresAt: now() + ms });
      },
      async delete(key) {
        entries.delete(key);
      },
      size: () => entries.size,
    };
  };
}

/** Far above any budget: the throttles compare counts themselves and never ask the limiter to refuse. */
const UNLIMITED = 2 ** 30;

/** Whole seconds, at least one (Redis keeps whole seconds: a 0 would never expire). */
const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/**
 * Counters every instance shares, kept by rate-limiter-flexible: in Redis when a client is given,
 * otherwise in the app's database (`rate_limit_counters`, which its migrations create).
 */
export function sharedCounters(store: { redis: Redis } | { db: DbOrTx }): CounterSource {
  const make = (keyPrefix: string, duration: number): RateLimiterStoreAbstract =>
    'redis' in store
      ? new RateLimiterRedis({ storeClient: store.redis, keyPrefix, points: UNLIMITED, duration })
      : new RateLimiterDrizzle({ storeClient: store.db, schema: rateLimitCounters, keyPrefix, points: UNLIMITED, duration, clearExpiredByTimeout: false });
  return (namespace) => {
    // rate-limiter-flexible ties a window to a limiter: one per window length, on the same keys.
    const byWindow = new Map<number, RateLimiterStoreAbstract>();
    const limiter = (duration: number) => {
      let found = byWindow.get(duration);
      if (!found) byWindow.set(duration, (found = make(namespace, duration)));
      return found;
    };
    const any = limiter(60);
    return {
      async hit(key, windowMs) {
        const res = await limiter(seconds(windowMs)).penalty(key, 1);
        return { count: res.consumedPoints, msLeft: res.msBeforeNext };
      },
      async get(key) {
        const res = await any.get(key);
        return res && res.msBeforeNext > 0 ? { count: res.consumedPoints, msLeft: res.msBeforeNext } : undefined;
      },
      async set(key, count, ms) {
        await any.set(key, count, seconds(ms));
      },
      async delete(key) {
        await any.delete(key);
      },
    };
  };
}

/** How often the database's expired counters are deleted. */
const PURGE_INTERVAL_MS = 10 * 60_000;

/**
 * The counters of a running app, after RATE_LIMIT_STORE: none for `memory` (each throttle keeps its
 * own, in this process), Redis for `redis`, the app's database for `postgres` (whose expired rows
 * are deleted every ten minutes). Their errors go to the app's log as warnings; they close with the
 * app (the purge stops, the Redis connection ends), before its database closes.
 */
export function openSharedCounters(
  app: Pick<FastifyInstance, 'log' | 'addHook'>,
  options: { store: 'memory' | 'postgres' | 'redis'; db: DbOrTx; redisUrl?: string },
): SharedCounters {
  const shared = sharedCountersOf({ ...options, onError: (error, what) => app.log.warn({ err: error }, what) });
  app.addHook('onClose', shared.close);
  return shared;
}

export interface SharedCounters {
  counters?: CounterSource;
  /** The request rate limiter's counter for the `postgres` store (see createRequestCounter); Redis has the plugin's own. */
  countHit?: RequestCounter['hit'];
  close: () => Promise<void>;
}

function sharedCountersOf(options: {
  store: 'memory' | 'postgres' | 'redis';
  db: DbOrTx;
  redisUrl?: string;
  onError: (error: Error, what: string) => void;
}): SharedCounters {
  if (options.store === 'memory') return { close: async () => {} };
  if (options.store === 'redis' && options.redisUrl) {
    const redis = new Redis(options.redisUrl, { connectTimeout: 500, maxRetriesPerRequest: 1 });
    // Without a listener ioredis reports connection errors as unhandled.
    redis.on('error', (error: Error) => options.onError(error, 'shared counters: Redis unreachable'));
    return {
      counters: sharedCounters({ redis }),
      close: async () => {
        await redis.quit().catch(() => redis.disconnect());
      },
    };
  }
  const { db } = options;
  const requests = createRequestCounter(db, { onError: (error) => options.onError(error as Error, 'shared counters: request positions not reserved') });
  let purging: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    purging = purgeExpiredCounters(db).catch((error: Error) => options.onError(error, 'shared counters: purging expired ones failed'));
  }, PURGE_INTERVAL_MS);
  timer.unref();
  return {
    counters: sharedCounters({ db }),
    countHit: requests.hit,
    close: async () => {
      clearInterval(timer);
      await purging;
      await requests.close();
    },
  };
}
