import { sql } from 'drizzle-orm';
import { index, integer, pgTable, text, timestamp, type PgSchema } from 'drizzle-orm/pg-core';
import { preparedOnce, queryRows } from './queries.js';
import { runClaimedWork } from './transactions.js';
import type { DbOrTx } from './types.js';

/**
 * The `Idempotency-Key`s of retry-safe writes (DESIGN.md §10), shared by every instance of an app.
 * One row per key in its scope: `id` is a hash of the caller, method, path and key (no caller
 * or key is stored as sent), `fingerprint` a hash of what the request sent. A row whose `status`
 * is null is a request still running, claimed by `owner` at `claimed_at`; once answered it holds
 * the answer to replay. `commits` counts the transactions the claim's work committed. Each app that honours the header includes this table in its schema.
 */
const idempotencyColumns = () => ({
  id: text('id').primaryKey(),
  fingerprint: text('fingerprint').notNull(),
  owner: text('owner').notNull(),
  claimedAt: timestamp('claimed_at', { withTimezone: true, mode: 'date' }).notNull(),
  expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  status: integer('status'),
  contentType: text('content_type'),
  location: text('location'),
  body: text('body'),
  // Transactions of the claim's work committed so far, each counted in its own transaction
  // (withTransaction): whether a commit whose answer was lost happened.
  commits: integer('commits').notNull().default(0),
});

/** The table as the queries here name it: unqualified, found in the app's own schema by the search_path. */
export const idempotencyKeys = pgTable('idempotency_keys', idempotencyColumns());

/** The table in an app's drizzle schema, in the app's PostgreSQL schema, for drizzle-kit to migrate. */
export function idempotencyKeysTable(schema: PgSchema) {
  return schema.table('idempotency_keys', idempotencyColumns(), (t) => [index('idempotency_keys_expires_at').on(t.expiresAt)]);
}

/** What a first answer left to replay. */
export interface RememberedAnswer {
  status: number;
  contentType: string | null;
  location: string | null;
  body: string;
}

/** A claim's outcome: this request does the work, another still does it, or it was done. */
export type IdempotencyClaim =
  | { state: 'claimed' }
  /** `done`: its work committed, its answer not recorded (yet, or ever if its instance was lost). */
  | { state: 'running'; done?: boolean }
  | { state: 'completed'; fingerprint: string; answer: RememberedAnswer };

export interface ClaimInput {
  id: string;
  fingerprint: string;
  /** A value only this request knows: completing or releasing the claim requires it. */
  owner: string;
  ttlSeconds: number;
  /** A claim still running after this long is taken to be a crashed instance's, and may be taken over. */
  staleSeconds: number;
}

const claimQuery = preparedOnce((db) =>
  db
    .insert(idempotencyKeys)
    .values({
      id: sql.placeholder('id'),
      fingerprint: sql.placeholder('fingerprint'),
      owner: sql.placeholder('owner'),
      claimedAt: sql`now()`,
      expiresAt: sql`now() + make_interval(secs => ${sql.placeholder('ttl')}::float8)`,
    })
    .onConflictDoUpdate({
      target: idempotencyKeys.id,
      set: {
        fingerprint: sql`excluded.fingerprint`,
        owner: sql`excluded.owner`,
        claimedAt: sql`now()`,
        expiresAt: sql`excluded.expires_at`,
        status: sql`null`,
        contentType: sql`null`,
        location: sql`null`,
        body: sql`null`,
        commits: sql`0`,
      },
      // An expired row is as good as gone (the purge may not have come yet); a running claim
      // that outlived the bound is a crashed instance's, unless its work committed: done again,
      // it would be done twice.
      setWhere: sql`${idempotencyKeys.expiresAt} <= now() or (${idempotencyKeys.status} is null and ${idempotencyKeys.commits} = 0 and ${idempotencyKeys.claimedAt} <= now() - make_interval(secs => ${sql.placeholder('stale')}::float8))`,
    })
    .returning({ id: idempotencyKeys.id })
    .prepare('idempotency_claim'),
);

const findQuery = preparedOnce((db) =>
  db
    .select({
      fingerprint: idempotencyKeys.fingerprint,
      status: idempotencyKeys.status,
      contentType: idempotencyKeys.contentType,
      location: idempotencyKeys.location,
      body: idempotencyKeys.body,
      commits: idempotencyKeys.commits,
    })
    .from(idempotencyKeys)
    .where(sql`${idempotencyKeys.id} = ${sql.placeholder('id')} and ${idempotencyKeys.expiresAt} > now()`)
    .prepare('idempotency_find'),
);

const completeQuery = preparedOnce((db) =>
  db
    .update(idempotencyKeys)
    .set({
      status: sql`${sql.placeholder('status')}::int`,
      contentType: sql`${sql.placeholder('contentType')}::text`,
      location: sql`${sql.placeholder('location')}::text`,
      body: sql`${sql.placeholder('body')}::text`,
      expiresAt: sql`now() + make_interval(secs => ${sql.placeholder('ttl')}::float8)`,
    })
    .where(sql`${idempotencyKeys.id} = ${sql.placeholder('id')} and ${idempotencyKeys.owner} = ${sql.placeholder('owner')}`)
    .prepare('idempotency_complete'),
);

const releaseQuery = preparedOnce((db) =>
  db
    .delete(idempotencyKeys)
    .where(
      sql`${idempotencyKeys.id} = ${sql.placeholder('id')} and ${idempotencyKeys.owner} = ${sql.placeholder('owner')} and ${idempotencyKeys.status} is null and ${idempotencyKeys.commits} = 0`,
    )
    .prepare('idempotency_release'),
);

/** Claims tried at most: between a claim refused and the read, the row may expire or be released. */
const CLAIM_ATTEMPTS = 3;

/**
 * The keys' store over an app's database. A claim is one statement when the key is new (the
 * common case): the insert wins, or the row that beat it is read in a second one.
 */
export function createIdempotencyStore(db: DbOrTx) {
  return {
    async claim(input: ClaimInput): Promise<IdempotencyClaim> {
      for (let attempt = 1; ; attempt++) {
        const claimed = await claimQuery(db).execute({ ...input, ttl: input.ttlSeconds, stale: input.staleSeconds });
        if (claimed.length > 0) return { state: 'claimed' };
        const [row] = await findQuery(db).execute({ id: input.id });
        if (row) {
          if (row.status === null) return { state: 'running', done: row.commits > 0 };
          const { status, contentType, location, body } = row;
          return { state: 'completed', fingerprint: row.fingerprint, answer: { status, contentType, location, body: body ?? '' } };
        }
        // Released (or expired) between the two statements: claim it again.
        if (attempt >= CLAIM_ATTEMPTS) return { state: 'running' };
      }
    },

    /** Keeps the answer of a claim this request holds, for `ttlSeconds` from now. */
    async complete(id: string, owner: string, answer: RememberedAnswer, ttlSeconds: number): Promise<void> {
      await completeQuery(db).execute({ id, owner, ...answer, ttl: ttlSeconds });
    },

    /**
     * Gives up a claim this request holds, answer not kept: the next request with the key does the
     * work. Not once its work committed: that work would be done twice.
     */
    async release(id: string, owner: string): Promise<void> {
      await releaseQuery(db).execute({ id, owner });
    },

    /** Runs a claim's work: its transactions count themselves on the claim (withTransaction). */
    runWork: runClaimedWork,

    /**
     * Settles a claim whose work lost the answer to a commit (ClaimedWork.uncertain), `committed`
     * commits before it answered: if the count on the row is past that, the commit happened and
     * `answer` is kept (answers true); otherwise it did not and the claim is released (false), in
     * one statement.
     */
    async settleUncertain(id: string, owner: string, committed: number, answer: RememberedAnswer | null, ttlSeconds: number): Promise<boolean> {
      const [row] = await queryRows<{ kept: number | string }>(
        db,
        sql`with kept as (
              update idempotency_keys
                 set status = ${answer?.status ?? null}::int, content_type = ${answer?.contentType ?? null}::text,
                     location = ${answer?.location ?? null}::text, body = ${answer?.body ?? null}::text,
                     expires_at = now() + make_interval(secs => ${ttlSeconds}::float8)
               where id = ${id} and owner = ${owner} and status is null and commits > ${committed}::int and ${answer !== null}::boolean
              returning 1),
            gone as (
              delete from idempotency_keys
               where id = ${id} and owner = ${owner} and status is null and commits <= ${committed}::int
              returning 1)
            select (select count(*) from kept) as kept`,
      );
      return Number(row?.kept ?? 0) > 0;
    },

    /** Deletes the expired keys; answers how many. */
    purgeExpired: () => purgeExpiredIdempotencyKeys(db),
  };
}

export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>;

/** Deletes the keys past their time to live; answers how many. */
export async function purgeExpiredIdempotencyKeys(db: DbOrTx): Promise<number> {
  const rows = await queryRows<{ n: number }>(
    db,
    sql`with gone as (delete from idempotency_keys where expires_at <= now() returning 1) select count(*)::int as n from gone`,
  );
  return rows[0]?.n ?? 0;
}
