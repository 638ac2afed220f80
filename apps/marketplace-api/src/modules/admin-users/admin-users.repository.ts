import { escapeLike } from '@repo/db';
import { and, asc, count, desc, eq, gt, gte, isNotNull, isNull, ne, sql, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import {
  deviceTokens,
  notifications,
  prestataireProfiles,
  sessions,
  userTokens,
  users,
  type NewNotification,
  type Role,
  type UserStatus,
} from '../../db/schema/index.js';
import { beforeBound, type UpperBound } from '../../lib/time-bounds.js';
import type { UserSort } from './admin-users.schemas.js';

export interface UserFilters {
  role?: Role;
  status?: UserStatus;
  /** Part of the name or e-mail, any case. */
  q?: string;
  emailVerified?: boolean;
  createdFrom?: Date;
  createdTo?: UpperBound;
  includeDeleted?: boolean;
}

// The same expression as users_name_trgm_idx, so that the trigram index serves the search.
const searchable = sql`(${users.firstName} || ' ' || ${users.lastName} || ' ' || ${users.email})`;

function userWhere(f: UserFilters): SQL | undefined {
  return and(
    f.includeDeleted ? undefined : isNull(users.deletedAt),
    f.role ? eq(users.role, f.role) : undefined,
    f.status ? eq(users.status, f.status) : undefined,
    f.q ? sql`${searchable} ilike ${`%${escapeLike(f.q)}%`}` : undefined,
    f.emailVerified === undefined ? undefined : f.emailVerified ? isNotNull(users.emailVerifiedAt) : isNull(users.emailVerifiedAt),
    f.createdFrom ? gte(users.createdAt, f.createdFrom) : undefined,
    f.createdTo ? beforeBound(users.createdAt, f.createdTo) : undefined,
  );
}

const ORDER: Record<UserSort, SQL[]> = {
  created_at: [asc(users.createdAt), asc(users.id)],
  '-created_at': [desc(users.createdAt), desc(users.id)],
  last_name: [asc(sql`lower(${users.lastName})`), asc(sql`lower(${users.firstName})`), asc(users.id)],
  '-last_name': [desc(sql`lower(${users.lastName})`), desc(sql`lower(${users.firstName})`), desc(users.id)],
  email: [asc(users.email)],
  '-email': [desc(users.email)],
};

/** Accounts with their prestataire profile where they have one. */
export async function listUsers(db: DbTx, filters: UserFilters, sort: UserSort, limit: number, offset: number) {
  const where = userWhere(filters);
  const rows = await db
    .select({ user: users, profile: prestataireProfiles })
    .from(users)
    .leftJoin(prestataireProfiles, eq(prestataireProfiles.userId, users.id))
    .where(where)
    .orderBy(...ORDER[sort])
    .limit(limit)
    .offset(offset);
  const [total] = await db.select({ n: count() }).from(users).where(where);
  return { rows, total: total?.n ?? 0 };
}

/** Any account by id, deleted ones included (their history stays visible to admins). */
export async function findUser(db: DbTx, userId: number) {
  const [row] = await db
    .select({ user: users, profile: prestataireProfiles })
    .from(users)
    .leftJoin(prestataireProfiles, eq(prestataireProfiles.userId, users.id))
    .where(eq(users.id, userId))
    .limit(1);
  return row;
}

/** A live account, locked until the end of the transaction (read-modify-write of its fields). */
export async function lockLiveUser(tx: DbTx, userId: number) {
  const [user] = await tx
    .select()
    .from(users)
    .where(and(eq(users.id, userId), isNull(users.deletedAt)))
    .for('update');
  return user;
}

export async function emailTakenByOther(db: DbTx, email: string, userId: number) {
  const [row] = await db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.email, email), ne(users.id, userId)))
    .limit(1);
  return Boolean(row);
}

/** Sessions that still answer (not revoked, used within their lifetime) and registered devices. */
export async function accountCounts(db: DbTx, userId: number, sessionTtlDays: number) {
  const [active] = await db
    .select({ n: count() })
    .from(sessions)
    .where(
      and(
        eq(sessions.userId, userId),
        isNull(sessions.revokedAt),
        gt(sessions.lastUsedAt, sql`now() - make_interval(days => ${sessionTtlDays})`),
      ),
    );
  const [devices] = await db.select({ n: count() }).from(deviceTokens).where(eq(deviceTokens.userId, userId));
  return { activeSessions: active?.n ?? 0, devices: devices?.n ?? 0 };
}

/** Links and codes sent to an address die with it. */
export async function deleteUserTokens(db: DbTx, userId: number) {
  await db.delete(userTokens).where(eq(userTokens.userId, userId));
}

export async function insertNotification(db: DbTx, values: NewNotification) {
  const [row] = await db.insert(notifications).values(values).returning();
  if (!row) throw new Error('insert returned no notification');
  return row;
}
