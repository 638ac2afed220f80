import { sql } from 'drizzle-orm';
import { integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { preparedOnce, queryRows, type DbOrTx } from './index.js';

/**
 * Counters every instance of an app shares: the request rate limiter's per-minute counts and the
 * login and e-mail throttles' (rate-limiter-flexible's RateLimiterDrizzle reads and writes the same
 * columns). One row per key, its count valid until `expire`. Each app that shares counters through
 * its database includes this table in its schema (its migrations create it).
 */
export const rateLimitCounters = pgTable('rate_limit_counters', {
  key: text('key').primaryKey(),
  points: integer('points').notNull(),
  expire: timestamp('expire', { withTimezone: true, mode: 'date' }),
});

/** Rows whose window ended this long ago are deleted by `purgeExpiredCounters`. */
const EXPIRED_KEEP_MS = 60 * 60_000;

const hitQuery = preparedOnce((db) =>
  db
    .insert(rateLimitCounters)
    .values({ key: sql.placeholder('key'), points: 1, expire: sql`now() + make_interval(secs => ${sql.placeholder('seconds')}::float8)` })
    .onConflictDoUpdate({
      target: rateLimitCounters.key,
      set: {
        points: sql`case when ${rateLimitCounters.expire} <= now() then 1 else ${rateLimitCounters.points} + 1 end`,
        expire: sql`case when ${rateLimitCounters.expire} <= now() then excluded.expire else ${rateLimitCounters.expire} end`,
      },
    })
    .returning({ points: rateLimitCounters.points, ttl: sql<number>`(extract(epoch from ${rateLimitCounters.expire} - now()) * 1000)::float8` })
    .prepare('rate_limit_hit'),
);

/**
 * Counts one hit on `key` in a fixed window of `windowMs` that starts at its first hit: answers the
 * hits in the current window and the milliseconds left of it. One statement, one round trip; the
 * database's clock decides the window, so instances whose clocks drift still agree.
 */
export async function countHit(db: DbOrTx, key: string, windowMs: number): Promise<{ current: number; ttl: number }> {
  const [row] = await hitQuery(db).execute({ key, seconds: windowMs / 1000 });
  if (!row) throw new Error('rate limit counter: the upsert answered no row');
  return { current: row.points, ttl: Math.max(0, Math.ceil(Number(row.ttl))) };
}

/** Deletes the counters whose window ended over an hour ago; answers how many. */
export async function purgeExpiredCounters(db: DbOrTx): Promise<number> {
  const rows = await queryRows<{ n: number }>(
    db,
    sql`with gone as (delete from rate_limit_counters where expire < now() - make_interval(secs => ${EXPIRED_KEEP_MS / 1000}) returning 1)
        select count(*)::int as n from gone`,
  );
  return rows[0]?.n ?? 0;
}
