import { sql } from 'drizzle-orm';
import { integer, pgTable, text, timestamp, type PgSchema } from 'drizzle-orm/pg-core';
import { arrayLiteral, preparedOnce, queryRows, type DbOrTx } from './index.js';

/**
 * Counters every instance of an app shares: the request rate limiter's per-minute counts and the
 * login and e-mail throttles' (rate-limiter-flexible's RateLimiterDrizzle reads and writes the same
 * columns). One row per key, its count valid until `expire`. Each app that shares counters through
 * its database includes this table in its schema (its migrations create it).
 */
const counterColumns = () => ({
  key: text('key').primaryKey(),
  points: integer('points').notNull(),
  expire: timestamp('expire', { withTimezone: true, mode: 'date' }),
});

/**
 * The table as the queries here (and RateLimiterDrizzle) name it: unqualified, found in the app's
 * own schema by the connection's search_path (packages/db `createDatabase`).
 */
export const rateLimitCounters = pgTable('rate_limit_counters', counterColumns());

/** The table in an app's drizzle schema, in the app's PostgreSQL schema, for drizzle-kit to migrate. */
export function rateLimitCountersTable(schema: PgSchema) {
  return schema.table('rate_limit_counters', counterColumns());
}

/** Rows whose window ended this long ago are deleted by `purgeExpiredCounters`. */
const EXPIRED_KEEP_MS = 60 * 60_000;

const addHitsQuery = preparedOnce((db) =>
  db
    .insert(rateLimitCounters)
    .values({
      key: sql.placeholder('key'),
      points: sql.placeholder('hits'),
      expire: sql`now() + make_interval(secs => ${sql.placeholder('seconds')}::float8)`,
    })
    .onConflictDoUpdate({
      target: rateLimitCounters.key,
      set: {
        points: sql`case when ${rateLimitCounters.expire} <= now() then excluded.points else ${rateLimitCounters.points} + excluded.points end`,
        expire: sql`case when ${rateLimitCounters.expire} <= now() then excluded.expire else ${rateLimitCounters.expire} end`,
      },
    })
    .returning({ points: rateLimitCounters.points, ttl: sql<number>`(extract(epoch from ${rateLimitCounters.expire} - now()) * 1000)::float8` })
    .prepare('rate_limit_add_hits'),
);

/**
 * Adds `hits` to `key`'s count in a fixed window of `windowMs` that starts at its first hit: answers
 * the count in the current window and the milliseconds left of it. One statement, one round trip;
 * the database's clock decides the window, so instances whose clocks drift still agree.
 */
export async function countHit(db: DbOrTx, key: string, windowMs: number, hits = 1): Promise<{ current: number; ttl: number }> {
  const [row] = await addHitsQuery(db).execute({ key, hits, seconds: windowMs / 1000 });
  if (!row) throw new Error('rate limit counter: the upsert answered no row');
  return { current: row.points, ttl: Math.max(0, Math.ceil(Number(row.ttl))) };
}

/** Adds the hits of many keys at once (one statement); answers each key's count and time left. */
async function countHits(db: DbOrTx, batch: { key: string; hits: number; windowMs: number }[]) {
  return queryRows<{ key: string; points: number; ttl: number }>(
    db,
    sql`insert into rate_limit_counters (key, points, expire)
        select k, n, now() + make_interval(secs => s)
          from unnest(${arrayLiteral(batch.map((b) => b.key))}::text[], ${arrayLiteral(batch.map((b) => b.hits))}::int[],
                      ${arrayLiteral(batch.map((b) => b.windowMs / 1000))}::float8[]) as u(k, n, s)
        on conflict (key) do update set
          points = case when rate_limit_counters.expire <= now() then excluded.points else rate_limit_counters.points + excluded.points end,
          expire = case when rate_limit_counters.expire <= now() then excluded.expire else rate_limit_counters.expire end
        returning key, points, (extract(epoch from expire - now()) * 1000)::float8 as ttl`,
  );
}

interface KeyView {
  windowMs: number;
  /** The count in the database at the last sync, this instance's own hits included. */
  synced: number;
  /** When the window ends, on this process's clock (from the time left the database answered). */
  endsAt: number;
  /** Hits counted here since, not yet added to the database. */
  pending: number;
}

export interface RequestCounterOptions {
  /** How often the hits counted here are added to the database in one statement. Default 100 ms. */
  flushMs?: number;
  /** Keys viewed at most; past it, new keys are counted in the database on every hit. */
  maxKeys?: number;
  onError?: (error: unknown) => void;
}

/**
 * The request rate limiter's counter shared by every instance through the database, at almost no
 * cost per request. A key seen for the first time in its window, or whose count comes near its
 * limit (half of it), is counted in the database at once (one round trip: exact). Below that, a
 * hit is counted here and answered from what the database said at the last sync plus the hits
 * since; every `flushMs` the hits counted here go to the database in one statement, which answers
 * the counts every instance has added. Far from its limit, a key may thus trail the other
 * instances by their last `flushMs` of hits; near it, every instance counts it exactly.
 */
export function createRequestCounter(db: DbOrTx, options: RequestCounterOptions = {}) {
  const flushMs = options.flushMs ?? 100;
  const maxKeys = options.maxKeys ?? 100_000;
  const onError = options.onError ?? (() => {});
  const views = new Map<string, KeyView>();
  let timer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> | undefined;

  function learn(key: string, windowMs: number, row: { current: number; ttl: number }, pending: number) {
    if (!views.has(key) && views.size >= maxKeys) return;
    views.set(key, { windowMs, synced: row.current, endsAt: Date.now() + row.ttl, pending });
  }

  async function flush() {
    const t = Date.now();
    const batch: { key: string; hits: number; windowMs: number }[] = [];
    for (const [key, view] of views) {
      if (view.pending > 0) {
        batch.push({ key, hits: view.pending, windowMs: view.windowMs });
        view.pending = 0;
      } else if (view.endsAt <= t) views.delete(key);
    }
    if (batch.length === 0) return;
    try {
      const rows = await countHits(db, batch);
      for (const row of rows) {
        const view = views.get(row.key);
        if (view) {
          view.synced = row.points;
          view.endsAt = Date.now() + Math.max(0, Math.ceil(Number(row.ttl)));
        }
      }
    } catch (error) {
      // The hits stay counted here and go with the next flush.
      for (const { key, hits } of batch) {
        const view = views.get(key);
        if (view) view.pending += hits;
      }
      onError(error);
    }
  }

  function schedule() {
    if (timer || flushing) return;
    timer = setTimeout(() => {
      timer = undefined;
      flushing = flush().finally(() => {
        flushing = undefined;
        for (const view of views.values()) {
          if (view.pending > 0) return schedule();
        }
      });
    }, flushMs);
    timer.unref();
  }

  return {
    /** Counts one hit on `key` (limit `max` in a window of `windowMs`): its count and the milliseconds left. */
    async hit(key: string, windowMs: number, max: number): Promise<{ current: number; ttl: number }> {
      const view = views.get(key);
      const t = Date.now();
      if (view && view.endsAt > t && view.windowMs === windowMs) {
        const estimate = view.synced + view.pending + 1;
        if (estimate * 2 < max) {
          view.pending += 1;
          schedule();
          return { current: estimate, ttl: view.endsAt - t };
        }
      }
      // New to this instance, its window over, or near its limit: counted in the database now,
      // with the hits still pending here.
      const hits = (view?.pending ?? 0) + 1;
      if (view) view.pending = 0;
      const row = await countHit(db, key, windowMs, hits);
      // Hits counted here while the statement ran stay pending.
      learn(key, windowMs, row, views.get(key)?.pending ?? 0);
      return row;
    },
    /** Sends what is pending and stops the timer (before the database closes). */
    async close() {
      if (timer) clearTimeout(timer);
      timer = undefined;
      await flushing;
      await flush();
    },
  };
}

export type RequestCounter = ReturnType<typeof createRequestCounter>;

/** Deletes the counters whose window ended over an hour ago; answers how many. */
export async function purgeExpiredCounters(db: DbOrTx): Promise<number> {
  const rows = await queryRows<{ n: number }>(
    db,
    sql`with gone as (delete from rate_limit_counters where expire < now() - make_interval(secs => ${EXPIRED_KEEP_MS / 1000}) returning 1)
        select count(*)::int as n from gone`,
  );
  return rows[0]?.n ?? 0;
}
