import { sql } from 'drizzle-orm';
import { integer, pgTable, text, timestamp, type PgSchema } from 'drizzle-orm/pg-core';
import { preparedOnce, queryRows } from './queries.js';
import type { DbOrTx } from './types.js';

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

interface KeyView {
  windowMs: number;
  /** When the window ends, on this process's clock (from the time left the database answered). */
  endsAt: number;
  /** The highest count the database has answered in this window. */
  seen: number;
  /** Positions in the window's count reserved for this instance and not yet handed out, in order: [from, to]. */
  ranges: [number, number][];
  /** A reservation on its way, if any. */
  reserving?: Promise<void>;
}

export interface RequestCounterOptions {
  /** Keys viewed at most; past it, new keys are counted in the database on every hit. */
  maxKeys?: number;
  onError?: (error: unknown) => void;
}

/** A reservation takes at most this share of what is left of the limit, and at most MAX_RESERVE positions. */
const RESERVE_SHARE = 1 / 32;
const MAX_RESERVE = 1000;

/**
 * The request rate limiter's counter shared by every instance through the database, at almost no
 * cost per request, that never lets more than the limit through in a window.
 *
 * A hit takes a position in the key's count of the window: a request passes when its position is
 * within the limit. Each instance reserves positions from the database in blocks, one statement
 * each, and hands them out here; positions are never handed out twice, so however the hits spread
 * over the instances, no more than the limit pass. A block is 1/32 of what the database last said
 * is left of the limit (at most MAX_RESERVE), so the blocks shrink near the limit and none is
 * taken past 31/32 of it: from there on each hit is counted in the database. The first hit of a
 * key in a window on an instance is counted alone. When half a block is left, the next is reserved
 * in the background. Positions not used up before the window ends count against it: the requests
 * a client makes elsewhere may be refused that many early, at most a block and a half per
 * instance (under 1/20 of the limit).
 */
export function createRequestCounter(db: DbOrTx, options: RequestCounterOptions = {}) {
  const maxKeys = options.maxKeys ?? 100_000;
  const onError = options.onError ?? (() => {});
  const views = new Map<string, KeyView>();

  const live = (key: string, windowMs: number, t: number) => {
    const view = views.get(key);
    return view && view.windowMs === windowMs && view.endsAt > t ? view : undefined;
  };

  const blockFor = (view: KeyView | undefined, max: number) =>
    view ? Math.min(MAX_RESERVE, Math.max(0, Math.floor((max - view.seen) * RESERVE_SHARE))) : 0;

  function take(view: KeyView): number | undefined {
    const range = view.ranges[0];
    if (!range) return undefined;
    const position = range[0];
    if (range[0] === range[1]) view.ranges.shift();
    else range[0] += 1;
    return position;
  }

  const left = (view: KeyView) => view.ranges.reduce((n, [from, to]) => n + to - from + 1, 0);

  /** Counts `1 + block` hits in the database: answers the first position, the rest reserved here. */
  async function reserve(key: string, windowMs: number, block: number, own: boolean) {
    const hits = block + (own ? 1 : 0);
    const row = await countHit(db, key, windowMs, hits);
    const t = Date.now();
    const endsAt = t + row.ttl;
    const first = row.current - hits + 1;
    const from = own ? first + 1 : first;
    let view = views.get(key);
    // A view of another window (a new one ends about a window later) starts over.
    if (!view || view.windowMs !== windowMs || view.endsAt <= t || Math.abs(endsAt - view.endsAt) >= Math.min(windowMs / 2, 1000)) {
      if (!view && views.size >= maxKeys) return { current: first, ttl: row.ttl };
      view = { windowMs, endsAt, seen: 0, ranges: [] };
      views.set(key, view);
    }
    view.seen = Math.max(view.seen, row.current);
    if (from <= row.current) view.ranges.push([from, row.current]);
    return { current: first, ttl: row.ttl };
  }

  /** Marks a reservation with positions to share as on its way: the key's other hits here wait for it. */
  function track(view: KeyView, reservation: Promise<unknown>) {
    const reserving = reservation.then(
      () => {},
      () => {},
    );
    view.reserving = reserving;
    void reserving.then(() => {
      if (view.reserving === reserving) view.reserving = undefined;
    });
  }

  function prefetch(key: string, view: KeyView, max: number) {
    const block = blockFor(view, max);
    if (view.reserving || block < 2 || left(view) * 2 > block) return;
    const reservation = reserve(key, view.windowMs, block, false);
    reservation.catch(onError);
    track(view, reservation);
  }

  let sweptAt = Date.now();
  /** Forgets the views of ended windows, every minute, or every second while the views are full. */
  function sweep(t: number) {
    if (t - sweptAt < (views.size >= maxKeys ? 1000 : 60_000)) return;
    sweptAt = t;
    for (const [key, view] of views) if (view.endsAt <= t && !view.reserving) views.delete(key);
  }

  return {
    /** Counts one hit on `key` (limit `max` in a window of `windowMs`): its position in the count and the milliseconds left. */
    async hit(key: string, windowMs: number, max: number): Promise<{ current: number; ttl: number }> {
      for (;;) {
        const t = Date.now();
        const view = live(key, windowMs, t);
        const position = view && take(view);
        if (view && position !== undefined) {
          prefetch(key, view, max);
          return { current: position, ttl: view.endsAt - t };
        }
        // A reservation on its way may bring positions: wait for it rather than take another.
        if (view?.reserving) {
          await view.reserving;
          continue;
        }
        sweep(t);
        const block = blockFor(view, max);
        const reservation = reserve(key, windowMs, block, true);
        if (view && block > 0) track(view, reservation);
        return reservation;
      }
    },
    /** Waits for the reservations on their way (before the database closes). */
    async close() {
      await Promise.all([...views.values()].map((view) => view.reserving));
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
