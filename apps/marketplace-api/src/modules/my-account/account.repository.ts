import { and, eq, isNull, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { deviceTokens, users, type DeviceKind } from '../../db/schema/index.js';

/** The live account, locked until the end of the transaction. */
export async function lockUser(db: DbTx, userId: number) {
  const [user] = await db
    .select()
    .from(users)
    .where(and(eq(users.id, userId), isNull(users.deletedAt)))
    .for('update');
  return user;
}


/**
 * Active administrators, locked: two admins deleting themselves at once are serialised, so one of
 * them always sees the other and the platform never ends without an administrator.
 */
export async function lockActiveAdminIds(db: DbTx) {
  const rows = await db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.role, 'admin'), eq(users.status, 'active'), isNull(users.deletedAt)))
    .orderBy(users.id)
    .for('update');
  return rows.map((r) => r.id);
}

/**
 * Registers a push target, or refreshes it when it is already known: one row per target, given to
 * whoever registered it last (a phone that changes hands stops notifying its former owner).
 */
export async function upsertDevice(
  db: DbTx,
  values: { userId: number; kind: DeviceKind; token: string; keys: { p256dh: string; auth: string } | null; platform: string | null },
) {
  const [row] = await db
    .insert(deviceTokens)
    .values(values)
    .onConflictDoUpdate({
      target: [deviceTokens.kind, deviceTokens.token],
      set: {
        userId: values.userId,
        keys: values.keys,
        platform: sql`coalesce(excluded.platform, ${deviceTokens.platform})`,
        lastSeenAt: sql`now()`,
      },
    })
    .returning({
      id: deviceTokens.id,
      kind: deviceTokens.kind,
      token: deviceTokens.token,
      platform: deviceTokens.platform,
      createdAt: deviceTokens.createdAt,
      lastSeenAt: deviceTokens.lastSeenAt,
      // An update sets last_seen_at to this transaction's now(), which is always later than a
      // creation made by an earlier request; an insert gives both columns the same default.
      created: sql<boolean>`${deviceTokens.createdAt} = ${deviceTokens.lastSeenAt}`,
    });
  return row!;
}
