import { and, count, desc, eq, gt, inArray, isNull, or, sql, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import {
  broadcasts,
  cities,
  deviceTokens,
  notifications,
  prestataireProfiles,
  serviceRequests,
  users,
  type Broadcast,
  type BroadcastAudience,
  type Lang,
  type Notification,
} from '../../db/schema/index.js';

/**
 * Who a broadcast reaches: live (active, not deleted) accounts of its audience; `all` is every
 * client and prestataire (administrators are not the marketplace's users). With a city: the
 * prestataires whose profile is in it, and the clients who have made a service request in it
 * (a client has no home city; the requests say where they need service).
 */
function audienceWhere(audience: BroadcastAudience, cityId: number | null): SQL {
  const clients =
    cityId === null
      ? sql`${users.role} = 'client'`
      : sql`(${users.role} = 'client' and exists (select 1 from ${serviceRequests} where ${serviceRequests.clientId} = ${users.id} and ${serviceRequests.cityId} = ${cityId}))`;
  const prestataires =
    cityId === null
      ? sql`${users.role} = 'prestataire'`
      : sql`(${users.role} = 'prestataire' and exists (select 1 from ${prestataireProfiles} where ${prestataireProfiles.userId} = ${users.id} and ${prestataireProfiles.cityId} = ${cityId}))`;
  const roles = audience === 'clients' ? clients : audience === 'prestataires' ? prestataires : or(clients, prestataires)!;
  return and(eq(users.status, 'active'), isNull(users.deletedAt), roles)!;
}

export async function cityExists(db: DbTx, id: number): Promise<boolean> {
  const [row] = await db.select({ id: cities.id }).from(cities).where(eq(cities.id, id)).limit(1);
  return row !== undefined;
}

export async function countRecipients(db: DbTx, audience: BroadcastAudience, cityId: number | null): Promise<number> {
  const [row] = await db.select({ n: count() }).from(users).where(audienceWhere(audience, cityId));
  return row?.n ?? 0;
}

export type Recipient = { id: number; lang: Lang; email: string; firstName: string };

/** The next recipients after the broadcast's cursor, by id. */
export async function recipientsAfter(db: DbTx, b: Broadcast, limit: number): Promise<Recipient[]> {
  return db
    .select({ id: users.id, lang: users.lang, email: users.email, firstName: users.firstName })
    .from(users)
    .where(and(audienceWhere(b.audience, b.cityId), gt(users.id, b.lastUserId)))
    .orderBy(users.id)
    .limit(limit);
}

export async function insertBroadcast(db: DbTx, values: typeof broadcasts.$inferInsert): Promise<Broadcast> {
  const [row] = await db.insert(broadcasts).values(values).returning();
  return row!;
}

export async function findBroadcast(db: DbTx, id: number): Promise<Broadcast | undefined> {
  const [row] = await db.select().from(broadcasts).where(eq(broadcasts.id, id)).limit(1);
  return row;
}

export async function listBroadcasts(db: DbTx, limit: number, offset: number) {
  const [rows, [total]] = await Promise.all([
    db.select().from(broadcasts).orderBy(desc(broadcasts.createdAt), desc(broadcasts.id)).limit(limit).offset(offset),
    db.select({ n: count() }).from(broadcasts),
  ]);
  return { rows, total: total?.n ?? 0 };
}

/**
 * Locks one broadcast still to send, skipping those another instance holds: two workers never
 * send the same batch. The least recently touched goes first, so one that keeps failing does not
 * hold the others back.
 */
export async function claimPending(tx: DbTx): Promise<Broadcast | undefined> {
  const [row] = await tx
    .select()
    .from(broadcasts)
    .where(inArray(broadcasts.status, ['queued', 'sending']))
    .orderBy(broadcasts.updatedAt, broadcasts.id)
    .limit(1)
    .for('update', { skipLocked: true });
  return row;
}

/** The batch's notifications; a user who already has this broadcast's is skipped (the unique index). */
export async function insertNotifications(
  tx: DbTx,
  b: Broadcast,
  recipients: Recipient[],
): Promise<Notification[]> {
  if (recipients.length === 0) return [];
  const data = { ...(b.data ?? {}), broadcast_id: b.id };
  return tx
    .insert(notifications)
    .values(recipients.map((r) => ({ userId: r.id, type: 'broadcast', title: b.title, body: b.body, data })))
    .onConflictDoNothing()
    .returning();
}

/** Moves the cursor past a batch and counts what it sent; `completed` when no recipient is left. */
export async function advance(tx: DbTx, id: number, move: { lastUserId: number; sent: number; completed: boolean }): Promise<Broadcast> {
  const [row] = await tx
    .update(broadcasts)
    .set({
      status: move.completed ? 'completed' : 'sending',
      lastUserId: sql`greatest(${broadcasts.lastUserId}, ${move.lastUserId})`,
      sentCount: sql`${broadcasts.sentCount} + ${move.sent}`,
      startedAt: sql`coalesce(${broadcasts.startedAt}, now())`,
      completedAt: move.completed ? sql`now()` : null,
      error: null,
      updatedAt: sql`now()`,
    })
    .where(eq(broadcasts.id, id))
    .returning();
  return row!;
}

/** A failed batch: the error is kept for the back office; `failed` ends the broadcast, otherwise it is retried. */
export async function recordFailure(db: DbTx, id: number, error: string, failed: boolean): Promise<void> {
  await db
    .update(broadcasts)
    .set({ error, updatedAt: sql`now()`, ...(failed ? { status: 'failed' as const } : {}) })
    .where(and(eq(broadcasts.id, id), inArray(broadcasts.status, ['queued', 'sending'])));
}

/** The web-push subscriptions of some users. */
export async function webPushSubscriptions(db: DbTx, userIds: number[]) {
  if (userIds.length === 0) return [];
  return db
    .select({ id: deviceTokens.id, userId: deviceTokens.userId, endpoint: deviceTokens.token, keys: deviceTokens.keys })
    .from(deviceTokens)
    .where(and(inArray(deviceTokens.userId, userIds), eq(deviceTokens.kind, 'webpush')));
}

export async function deleteDevice(db: DbTx, id: number): Promise<void> {
  await db.delete(deviceTokens).where(eq(deviceTokens.id, id));
}
