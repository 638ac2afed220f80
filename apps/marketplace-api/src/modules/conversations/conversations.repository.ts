import { aliasedTable, and, count, desc, eq, exists, inArray, isNull, lt, lte, ne, or, sql, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import {
  appointments,
  conversationMessages,
  conversations,
  DISPUTE_STATUSES,
  offers,
  prestataireProfiles,
  serviceRequests,
  users,
  type Conversation,
  type ConversationMessage,
  type DisputeStatus,
} from '../../db/schema/index.js';
import { defineStateMachine } from '../../lib/transitions.js';

/** A conversation's dispute (DESIGN.md §6): `none` → `open` [either party] → `resolved` [admin]. */
export const disputeMachine = defineStateMachine({
  table: conversations,
  key: conversations.id,
  state: conversations.disputeStatus,
  states: DISPUTE_STATUSES,
  label: 'Conversation',
  noun: 'conversation',
  stateName: 'dispute status',
  subjectType: 'conversation',
  audit: (c) => ({
    dispute_status: c.disputeStatus,
    conversation_id: c.id,
    client_id: c.clientId,
    prestataire_id: c.prestataireId,
    service_request_id: c.serviceRequestId,
    appointment_id: c.appointmentId,
    dispute_reason: c.disputeReason,
    dispute_reported_by: c.disputeReportedBy,
    resolution_note: c.disputeResolutionNote,
    refund_cents: c.disputeRefundCents,
  }),
  stamp: () => ({ updatedAt: sql`now()` }),
});

const clientUser = aliasedTable(users, 'client_user');
const prestataireUser = aliasedTable(users, 'prestataire_user');

const view = {
  conversation: conversations,
  client: { id: clientUser.id, firstName: clientUser.firstName, lastName: clientUser.lastName },
  prestataire: { id: prestataireUser.id, firstName: prestataireUser.firstName, lastName: prestataireUser.lastName },
  businessName: prestataireProfiles.businessName,
};

export interface ConversationRow {
  conversation: Conversation;
  client: { id: number; firstName: string; lastName: string };
  prestataire: { id: number; firstName: string; lastName: string };
  businessName: string | null;
  lastMessage: ConversationMessage | null;
  unreadCount: number;
}

/** The conversations a user takes part in. */
export function partyOf(userId: number): SQL {
  return or(eq(conversations.clientId, userId), eq(conversations.prestataireId, userId))!;
}

/** Adds each conversation's last message and the viewer's unread count: two queries for the whole page. */
async function withExtras(db: DbTx, rows: Omit<ConversationRow, 'lastMessage' | 'unreadCount'>[], viewerId: number | null): Promise<ConversationRow[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.conversation.id);
  const [lastMessages, unread] = await Promise.all([
    db
      .selectDistinctOn([conversationMessages.conversationId])
      .from(conversationMessages)
      .where(inArray(conversationMessages.conversationId, ids))
      .orderBy(conversationMessages.conversationId, desc(conversationMessages.id)),
    viewerId === null
      ? Promise.resolve([])
      : db
          .select({ conversationId: conversationMessages.conversationId, n: count() })
          .from(conversationMessages)
          .where(
            and(
              inArray(conversationMessages.conversationId, ids),
              ne(conversationMessages.senderId, viewerId),
              isNull(conversationMessages.readAt),
            ),
          )
          .groupBy(conversationMessages.conversationId),
  ]);
  const last = new Map(lastMessages.map((m) => [m.conversationId, m]));
  const counts = new Map(unread.map((u) => [u.conversationId, u.n]));
  return rows.map((row) => ({ ...row, lastMessage: last.get(row.conversation.id) ?? null, unreadCount: counts.get(row.conversation.id) ?? 0 }));
}

function selectView(db: DbTx) {
  return db
    .select(view)
    .from(conversations)
    .innerJoin(clientUser, eq(clientUser.id, conversations.clientId))
    .innerJoin(prestataireUser, eq(prestataireUser.id, conversations.prestataireId))
    .leftJoin(prestataireProfiles, eq(prestataireProfiles.userId, conversations.prestataireId));
}

/** One conversation as `viewerId` sees it (its unread count), when `where` lets it be seen. */
export async function findConversationRow(db: DbTx, id: number, viewerId: number | null, where?: SQL): Promise<ConversationRow | undefined> {
  const rows = await selectView(db)
    .where(and(eq(conversations.id, id), where))
    .limit(1);
  const [row] = await withExtras(db, rows, viewerId);
  return row;
}

export async function listConversations(
  db: DbTx,
  filter: { where?: SQL; disputeStatus?: DisputeStatus },
  viewerId: number | null,
  limit: number,
  offset: number,
): Promise<{ rows: ConversationRow[]; total: number }> {
  const where = and(filter.where, filter.disputeStatus ? eq(conversations.disputeStatus, filter.disputeStatus) : undefined);
  const [rows, [total]] = await Promise.all([
    selectView(db)
      .where(where)
      .orderBy(sql`coalesce(${conversations.lastMessageAt}, ${conversations.createdAt}) desc`, desc(conversations.id))
      .limit(limit)
      .offset(offset),
    db.select({ n: count() }).from(conversations).where(where),
  ]);
  return { rows: await withExtras(db, rows, viewerId), total: total?.n ?? 0 };
}

/** The conversation of a pair about a subject, if there is one (the unique index's key). */
export async function findBySubject(
  db: DbTx,
  key: { clientId: number; prestataireId: number; serviceRequestId: number | null; appointmentId: number | null },
): Promise<Conversation | undefined> {
  const [row] = await db
    .select()
    .from(conversations)
    .where(
      and(
        eq(conversations.clientId, key.clientId),
        eq(conversations.prestataireId, key.prestataireId),
        sql`coalesce(${conversations.serviceRequestId}, 0) = ${key.serviceRequestId ?? 0}`,
        sql`coalesce(${conversations.appointmentId}, 0) = ${key.appointmentId ?? 0}`,
      ),
    )
    .limit(1);
  return row;
}

/** Inserts a conversation unless the pair already has one about the subject (then answers undefined). */
export async function insertConversation(db: DbTx, values: typeof conversations.$inferInsert): Promise<Conversation | undefined> {
  const [row] = await db.insert(conversations).values(values).onConflictDoNothing().returning();
  return row;
}

/** A live (not deleted) account and its role. */
export async function findLiveUser(db: DbTx, id: number) {
  const [row] = await db
    .select({ id: users.id, role: users.role })
    .from(users)
    .where(and(eq(users.id, id), isNull(users.deletedAt)))
    .limit(1);
  return row;
}

/**
 * Whether a request involves both: the client's own, and aimed at the prestataire or quoted by it.
 */
export async function requestInvolves(db: DbTx, requestId: number, clientId: number, prestataireId: number): Promise<boolean> {
  const [row] = await db
    .select({ id: serviceRequests.id })
    .from(serviceRequests)
    .where(
      and(
        eq(serviceRequests.id, requestId),
        eq(serviceRequests.clientId, clientId),
        or(
          eq(serviceRequests.prestataireId, prestataireId),
          exists(
            db
              .select({ id: offers.id })
              .from(offers)
              .where(and(eq(offers.serviceRequestId, sql`${serviceRequests.id}`), eq(offers.prestataireId, prestataireId))),
          ),
        ),
      ),
    )
    .limit(1);
  return Boolean(row);
}

export async function findAppointmentParties(db: DbTx, appointmentId: number) {
  const [row] = await db
    .select({
      id: appointments.id,
      clientId: appointments.clientId,
      prestataireId: appointments.prestataireId,
      serviceRequestId: appointments.serviceRequestId,
      priceCents: appointments.priceCents,
    })
    .from(appointments)
    .where(eq(appointments.id, appointmentId))
    .limit(1);
  return row;
}

export async function insertMessage(db: DbTx, values: { conversationId: number; senderId: number; body: string }): Promise<ConversationMessage> {
  const [row] = await db.insert(conversationMessages).values(values).returning();
  await db
    .update(conversations)
    .set({ lastMessageAt: row!.createdAt, updatedAt: sql`now()` })
    .where(eq(conversations.id, values.conversationId));
  return row!;
}

export async function findMessage(db: DbTx, conversationId: number, messageId: number) {
  const [row] = await db
    .select()
    .from(conversationMessages)
    .where(and(eq(conversationMessages.conversationId, conversationId), eq(conversationMessages.id, messageId)))
    .limit(1);
  return row;
}

/** A page of messages, newest first, older than `before` when given; one more than `limit` tells whether more remain. */
export async function listMessages(db: DbTx, conversationId: number, before: number | undefined, limit: number): Promise<ConversationMessage[]> {
  return db
    .select()
    .from(conversationMessages)
    .where(and(eq(conversationMessages.conversationId, conversationId), before === undefined ? undefined : lt(conversationMessages.id, before)))
    .orderBy(desc(conversationMessages.id))
    .limit(limit);
}

/**
 * Marks the other party's unread messages read, up to `upTo` when given; answers the newest message
 * id the reader has now read (null when the other party never wrote).
 */
export async function markRead(db: DbTx, conversationId: number, readerId: number, upTo: number | undefined, at: Date): Promise<number | null> {
  const fromOther = and(
    eq(conversationMessages.conversationId, conversationId),
    ne(conversationMessages.senderId, readerId),
    upTo === undefined ? undefined : lte(conversationMessages.id, upTo),
  );
  await db
    .update(conversationMessages)
    .set({ readAt: at })
    .where(and(fromOther, isNull(conversationMessages.readAt)));
  const [last] = await db
    .select({ id: conversationMessages.id })
    .from(conversationMessages)
    .where(fromOther)
    .orderBy(desc(conversationMessages.id))
    .limit(1);
  return last?.id ?? null;
}
