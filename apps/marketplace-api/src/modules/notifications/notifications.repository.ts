import { and, count, desc, eq, inArray, isNull, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import {
  appointments,
  conversations,
  deviceTokens,
  notifications,
  offers,
  serviceRequests,
  users,
  type Lang,
  type NewNotification,
  type Notification,
} from '../../db/schema/index.js';

const own = (userId: number, id?: number) => and(eq(notifications.userId, userId), id === undefined ? undefined : eq(notifications.id, id));

export async function listNotifications(db: DbTx, userId: number, unreadOnly: boolean, limit: number, offset: number) {
  const where = and(own(userId), unreadOnly ? isNull(notifications.readAt) : undefined);
  const [rows, [total], [unread]] = await Promise.all([
    db.select().from(notifications).where(where).orderBy(desc(notifications.createdAt), desc(notifications.id)).limit(limit).offset(offset),
    db.select({ n: count() }).from(notifications).where(where),
    db.select({ n: count() }).from(notifications).where(and(own(userId), isNull(notifications.readAt))),
  ]);
  return { rows, total: total?.n ?? 0, unread: unread?.n ?? 0 };
}

/** Marks one of the user's notifications read (kept as first read when already read). */
export async function markRead(db: DbTx, userId: number, id: number): Promise<Notification | undefined> {
  const [row] = await db
    .update(notifications)
    .set({ readAt: sql`coalesce(${notifications.readAt}, now())` })
    .where(own(userId, id))
    .returning();
  return row;
}

export async function markAllRead(db: DbTx, userId: number): Promise<number> {
  const rows = await db
    .update(notifications)
    .set({ readAt: sql`now()` })
    .where(and(own(userId), isNull(notifications.readAt)))
    .returning({ id: notifications.id });
  return rows.length;
}

export async function deleteOne(db: DbTx, userId: number, id: number): Promise<boolean> {
  const rows = await db.delete(notifications).where(own(userId, id)).returning({ id: notifications.id });
  return rows.length > 0;
}

export async function deleteAll(db: DbTx, userId: number): Promise<number> {
  const rows = await db.delete(notifications).where(own(userId)).returning({ id: notifications.id });
  return rows.length;
}

/** Inserts the notifications an event makes; one already made from the same event for the same user is skipped. */
export async function insertFromEvent(db: DbTx, values: NewNotification[]): Promise<Notification[]> {
  if (values.length === 0) return [];
  return db.insert(notifications).values(values).onConflictDoNothing().returning();
}

/** The live accounts among `ids`, with their language. */
export async function recipients(db: DbTx, ids: number[]): Promise<{ id: number; lang: Lang }[]> {
  if (ids.length === 0) return [];
  return db
    .select({ id: users.id, lang: users.lang })
    .from(users)
    .where(and(inArray(users.id, ids), isNull(users.deletedAt)));
}

/** The parties of a subject the lifecycle events name: who to tell about it. */
export async function appointmentParties(db: DbTx, id: number) {
  const [row] = await db
    .select({ clientId: appointments.clientId, prestataireId: appointments.prestataireId, serviceRequestId: appointments.serviceRequestId })
    .from(appointments)
    .where(eq(appointments.id, id))
    .limit(1);
  return row;
}

export async function requestParties(db: DbTx, id: number) {
  const [row] = await db
    .select({ clientId: serviceRequests.clientId, prestataireId: serviceRequests.prestataireId })
    .from(serviceRequests)
    .where(eq(serviceRequests.id, id))
    .limit(1);
  return row;
}

export async function offerParties(db: DbTx, id: number) {
  const [row] = await db
    .select({ clientId: serviceRequests.clientId, prestataireId: offers.prestataireId, serviceRequestId: offers.serviceRequestId })
    .from(offers)
    .innerJoin(serviceRequests, eq(serviceRequests.id, offers.serviceRequestId))
    .where(eq(offers.id, id))
    .limit(1);
  return row;
}

export async function conversationParties(db: DbTx, id: number) {
  const [row] = await db
    .select({ clientId: conversations.clientId, prestataireId: conversations.prestataireId })
    .from(conversations)
    .where(eq(conversations.id, id))
    .limit(1);
  return row;
}

/** A user's web-push subscriptions. */
export async function webPushSubscriptions(db: DbTx, userId: number) {
  return db
    .select({ id: deviceTokens.id, endpoint: deviceTokens.token, keys: deviceTokens.keys })
    .from(deviceTokens)
    .where(and(eq(deviceTokens.userId, userId), eq(deviceTokens.kind, 'webpush')));
}

export async function deleteDevice(db: DbTx, id: number): Promise<void> {
  await db.delete(deviceTokens).where(eq(deviceTokens.id, id));
}
