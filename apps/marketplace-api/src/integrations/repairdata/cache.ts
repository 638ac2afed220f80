import { and, eq, gt, inArray, lt, sql } from 'drizzle-orm';
import type { Db } from '../../db/index.js';
import { repairdataCache } from '../../db/schema/index.js';
import type { RepairDataProvider, RepairTime } from './repairdata.js';

export interface RepairDataCacheOptions {
  db: Db;
  ttlHours: number;
  log?: { warn(obj: object, msg: string): void };
  now?: () => Date;
}

const PURGE_EVERY_MS = 60 * 60 * 1000;

type Lookup<T> = { hit: true; value: T } | { hit: false };

/**
 * Keeps every answer of the wrapped source in `repairdata_cache`, "not found" included, because
 * the vendor bills per call: a live entry answers without calling it. Failures are not cached.
 * Concurrent identical calls share one vendor call. The cache is an optimisation only: if the
 * database fails, the vendor answers directly.
 *
 * Uses the top-level database handle, so it must not be called from inside a transaction
 * (PGlite has a single connection).
 */
export function withRepairDataCache(inner: RepairDataProvider, options: RepairDataCacheOptions): RepairDataProvider {
  const { db } = options;
  const now = options.now ?? (() => new Date());
  const ttlMs = options.ttlHours * 60 * 60 * 1000;
  const inFlight = new Map<string, Promise<unknown>>();
  let lastPurge = 0;

  async function read<T>(key: string): Promise<Lookup<T>> {
    try {
      const rows = await db
        .update(repairdataCache)
        .set({ hits: sql`${repairdataCache.hits} + 1` })
        .where(and(eq(repairdataCache.key, key), gt(repairdataCache.expiresAt, now())))
        .returning({ value: repairdataCache.value });
      return rows[0] ? { hit: true, value: rows[0].value as T } : { hit: false };
    } catch (error) {
      options.log?.warn({ err: error, key }, 'repair-data cache unreadable');
      return { hit: false };
    }
  }

  /** Live entries among `keys`, without counting a hit (the caller may not use them). */
  async function peek<T>(keys: string[]): Promise<Map<string, T>> {
    if (keys.length === 0) return new Map();
    try {
      const rows = await db
        .select({ key: repairdataCache.key, value: repairdataCache.value })
        .from(repairdataCache)
        .where(and(inArray(repairdataCache.key, keys), gt(repairdataCache.expiresAt, now())));
      return new Map(rows.map((r) => [r.key, r.value as T]));
    } catch (error) {
      options.log?.warn({ err: error }, 'repair-data cache unreadable');
      return new Map();
    }
  }

  async function countHits(keys: string[]) {
    try {
      await db
        .update(repairdataCache)
        .set({ hits: sql`${repairdataCache.hits} + 1` })
        .where(inArray(repairdataCache.key, keys));
    } catch (error) {
      options.log?.warn({ err: error }, 'repair-data cache hits not counted');
    }
  }

  async function write(key: string, value: unknown) {
    const at = now();
    const expiresAt = new Date(at.getTime() + ttlMs);
    try {
      await db
        .insert(repairdataCache)
        .values({ key, value, expiresAt, createdAt: at })
        .onConflictDoUpdate({ target: repairdataCache.key, set: { value, expiresAt, createdAt: at, hits: 0 } });
      // Free-text searches make keys without bound; expired rows go once an hour.
      if (at.getTime() - lastPurge >= PURGE_EVERY_MS) {
        lastPurge = at.getTime();
        await db.delete(repairdataCache).where(lt(repairdataCache.expiresAt, at));
      }
    } catch (error) {
      options.log?.warn({ err: error, key }, 'repair-data cache not written');
    }
  }

  function cached<T>(key: string, fetch: () => Promise<T>): Promise<T> {
    const pending = inFlight.get(key);
    if (pending) return pending as Promise<T>;
    const promise = (async () => {
      const found = await read<T>(key);
      if (found.hit) return found.value;
      const value = await fetch();
      await write(key, value);
      return value;
    })().finally(() => inFlight.delete(key));
    inFlight.set(key, promise);
    return promise;
  }

  const keyOf = (operation: string, ...args: unknown[]) => `${operation}:${JSON.stringify(args)}`;

  return {
    kind: inner.kind,

    identify(query) {
      const key = query.vin
        ? keyOf('identify', 'vin', query.vin.replace(/[\s-]/g, '').toUpperCase())
        : keyOf('identify', 'plate', query.plate ?? null);
      return cached(key, () => inner.identify(query));
    },

    vehicle(vehicleId) {
      return cached(keyOf('vehicle', vehicleId), () => inner.vehicle(vehicleId));
    },

    searchTasks(vehicleId, query) {
      const q = query.q?.trim().toLowerCase() || null;
      return cached(keyOf('tasks', vehicleId, query.systemCode ?? null, q), () => inner.searchTasks(vehicleId, query));
    },

    repairTime(vehicleId, taskCode) {
      return cached(keyOf('time', vehicleId, taskCode), () => inner.repairTime(vehicleId, taskCode));
    },

    /**
     * Answered from the single-task entries when each code has one and at least one is a time
     * (which proves the vehicle exists); otherwise one vendor call for the whole batch, whose
     * answer also fills the single-task entries.
     */
    async repairTimes(vehicleId, taskCodes) {
      const codes = [...new Set(taskCodes)];
      const singleKeys = codes.map((code) => keyOf('time', vehicleId, code));
      const singles = await peek<RepairTime | null>(singleKeys);
      if (singles.size === codes.length && [...singles.values()].some(Boolean)) {
        await countHits(singleKeys);
        const times = singleKeys.map((key) => singles.get(key)).filter((t): t is RepairTime => Boolean(t));
        return { times, unknown: codes.filter((_, i) => !singles.get(singleKeys[i]!)) };
      }
      return cached(keyOf('times', vehicleId, [...codes].sort()), async () => {
        const result = await inner.repairTimes(vehicleId, codes);
        if (result) {
          for (const time of result.times) await write(keyOf('time', vehicleId, time.taskCode), time);
          for (const code of result.unknown) await write(keyOf('time', vehicleId, code), null);
        }
        return result;
      });
    },

    procedures(vehicleId, systemCode) {
      return cached(keyOf('procedures', vehicleId, systemCode), () => inner.procedures(vehicleId, systemCode));
    },
  };
}
