import type { DbOrTx } from '@repo/db';
import { and, eq, gt, isNull, lt, ne, sql, type NotNull, type SQL } from 'drizzle-orm';
import { index, integer, pgTable, text, timestamp, type AnyPgColumn, type PgSchema, type PgTable } from 'drizzle-orm/pg-core';
import type { SessionStore } from './plugin.js';
import { generateSessionId } from './tokens.js';

export interface SessionsTableOptions<IpRequired extends boolean> {
  /** The app's PostgreSQL schema, which holds all of its tables; public when absent. */
  schema?: PgSchema;
  /** The users table's id: a session belongs to a user and goes with it. */
  userId: () => AnyPgColumn;
  /** The name of the index on `user_id`, as the app's migrations created it. */
  userIndexName: string;
  /** Whether `ip` is NOT NULL, as the app's migrations created it. */
  ipRequired: IpRequired;
}

/**
 * The `sessions` table behind bearer tokens (the JWT's `sid`), for an app's drizzle schema to
 * export. The options keep what the apps' migrations already differ in (an index name, whether
 * the IP is required), so that drizzle-kit sees the tables it generated them from.
 */
export function sessionsTable<IpRequired extends boolean>(options: SessionsTableOptions<IpRequired>) {
  const ip = text('ip');
  // One table type either way: only the name drizzle qualifies it with differs.
  const table = (options.schema?.table ?? pgTable) as unknown as PgSchema['table'];
  return table(
    'sessions',
    {
      id: text('id').primaryKey(),
      userId: integer('user_id').notNull().references(options.userId, { onDelete: 'cascade' }),
      ip: (options.ipRequired ? ip.notNull() : ip) as IpRequired extends true ? NotNull<typeof ip> : typeof ip,
      userAgent: text('user_agent'),
      createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
      lastUsedAt: timestamp('last_used_at', { withTimezone: true }).notNull().defaultNow(),
      revokedAt: timestamp('revoked_at', { withTimezone: true }),
    },
    (t) => [index(options.userIndexName).on(t.userId)],
  );
}

/** An app's sessions table, whichever IP constraint its migrations gave it. */
export type SessionsTable = ReturnType<typeof sessionsTable<true>> | ReturnType<typeof sessionsTable<false>>;

/**
 * Who a live session's user is. Either every user has one role and the session alone decides, or
 * the users table is joined: its role column, and the condition a user must meet to stay signed in
 * (a suspended or deleted account then loses its sessions on the next request).
 */
export type SessionUser = { role: string } | { table: PgTable; id: AnyPgColumn; role: AnyPgColumn; allowed?: SQL };

/** The queries on an app's sessions table; every function takes `db | tx`. */
export function createSessionsRepository(options: { table: SessionsTable; user: SessionUser }) {
  // The queries read and write the same columns in either shape (an IP is always given).
  const table = options.table as ReturnType<typeof sessionsTable<false>>;
  const { user } = options;

  /**
   * The live-session lookup runs on every authenticated request: built and prepared once per
   * database (and idle timeout), then executed with the session's key, rather than composed anew
   * each time.
   */
  function prepareResolve(db: DbOrTx, ttlDays: number) {
    const live = and(
      eq(table.id, sql.placeholder('sessionId')),
      eq(table.userId, sql.placeholder('userId')),
      isNull(table.revokedAt),
      gt(table.lastUsedAt, sql`now() - make_interval(days => ${ttlDays})`),
    );
    return 'table' in user
      ? db
          .select({ lastUsedAt: table.lastUsedAt, role: user.role })
          .from(table)
          .innerJoin(user.table, eq(user.id, table.userId))
          .where(and(live, user.allowed))
          .limit(1)
          .prepare(`session_resolve_${ttlDays}`)
      : db.select({ lastUsedAt: table.lastUsedAt }).from(table).where(live).limit(1).prepare(`session_resolve_${ttlDays}`);
  }
  const prepared = new WeakMap<DbOrTx, Map<number, ReturnType<typeof prepareResolve>>>();
  function resolver(db: DbOrTx, ttlDays: number) {
    let byTtl = prepared.get(db);
    if (!byTtl) prepared.set(db, (byTtl = new Map()));
    let query = byTtl.get(ttlDays);
    if (!query) byTtl.set(ttlDays, (query = prepareResolve(db, ttlDays)));
    return query;
  }

  return {
    async insert(db: DbOrTx, values: { id: string; userId: number; ip: string; userAgent?: string }) {
      await db.insert(table).values(values);
    },

    /**
     * The role of a live session (not revoked, not idle for `ttlDays`, its user allowed to sign
     * in), sliding its `last_used_at`; undefined otherwise.
     */
    async resolve(db: DbOrTx, sessionId: string, userId: number, ttlDays: number): Promise<{ role: string } | undefined> {
      const [row] = await resolver(db, ttlDays).execute({ sessionId, userId });
      const found = row as { lastUsedAt: Date; role?: unknown } | undefined;
      const role = found && ('table' in user ? found.role : user.role);
      if (!found) return undefined;
      // Written at most once a minute: a busy client costs one read per request, not one write.
      if (Date.now() - found.lastUsedAt.getTime() > 60_000) {
        await db
          .update(table)
          .set({ lastUsedAt: sql`now()` })
          .where(and(eq(table.id, sessionId), lt(table.lastUsedAt, sql`now() - interval '60 seconds'`)));
      }
      return { role: String(role) };
    },

    async revoke(db: DbOrTx, sessionId: string) {
      await db.update(table).set({ revokedAt: sql`now()` }).where(and(eq(table.id, sessionId), isNull(table.revokedAt)));
    },

    /** Ends every live session of a user, but `exceptSessionId` (the one changing the password). */
    async revokeAllForUser(db: DbOrTx, userId: number, exceptSessionId?: string) {
      await db
        .update(table)
        .set({ revokedAt: sql`now()` })
        .where(and(eq(table.userId, userId), isNull(table.revokedAt), exceptSessionId ? ne(table.id, exceptSessionId) : undefined));
    },

    /** When a session began: "signed in recently" for sensitive actions. */
    async startedAt(db: DbOrTx, sessionId: string): Promise<Date | undefined> {
      const [row] = await db.select({ createdAt: table.createdAt }).from(table).where(eq(table.id, sessionId)).limit(1);
      return row?.createdAt;
    },
  };
}

export type SessionsRepository = ReturnType<typeof createSessionsRepository>;

/** The auth plugin's store over an app's sessions table: sessions idle for `ttlDays` are over. */
export function createSessionStore(deps: { db: DbOrTx; sessions: SessionsRepository; ttlDays: number }): SessionStore {
  const { db, sessions, ttlDays } = deps;
  return {
    async create({ userId, ip, userAgent }) {
      const id = generateSessionId();
      await sessions.insert(db, { id, userId, ip, userAgent });
      return { id };
    },
    async resolve(sessionId, userId) {
      return (await sessions.resolve(db, sessionId, userId, ttlDays)) ?? null;
    },
    revoke: (sessionId) => sessions.revoke(db, sessionId),
    revokeAllForUser: (userId, except) => sessions.revokeAllForUser(db, userId, except),
  };
}
