import { bigId, id, iso, paginationMeta, paginationQuery, storableText, timestamp, UNSTORABLE_TEXT_MESSAGE } from '@repo/schemas';
import { z } from 'zod';
import { DISPUTE_STATUSES, type ConversationMessage } from '../../db/schema/index.js';
import type { ConversationRow } from './conversations.repository.js';

const bodyId = z.number().int().min(1).max(2_147_483_647);
const bodyBigId = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);
const text = (max: number) => z.string().trim().min(1).max(max).refine(storableText, UNSTORABLE_TEXT_MESSAGE);

export const ConversationParams = z.object({ conversation: id });

/** `POST /conversations` (DESIGN.md §6): the other party, an optional subject, an optional first message. */
export const CreateConversationBody = z.object({
  participant_id: bodyId,
  service_request_id: bodyId.nullish(),
  appointment_id: bodyId.nullish(),
  message: text(5000).nullish(),
});
export type CreateConversationBody = z.infer<typeof CreateConversationBody>;

export const ConversationsQuery = paginationQuery({ defaultPerPage: 20, maxPerPage: 100 }).extend({
  dispute_status: z.enum(DISPUTE_STATUSES).optional(),
});
export type ConversationsQuery = z.infer<typeof ConversationsQuery>;

export const MessageBody = z.object({ body: text(5000) });
export type MessageBody = z.infer<typeof MessageBody>;

/** Cursor paging, newest first: `before` is the oldest message id of the page already shown. */
export const MessagesQuery = z.object({
  before: bigId.optional(),
  limit: z.coerce.number().int().min(1).max(100).default(30),
});
export type MessagesQuery = z.infer<typeof MessagesQuery>;

export const ReadBody = z.object({ last_read_message_id: bodyBigId.nullish() }).nullish();
export type ReadBody = z.infer<typeof ReadBody>;

export const DisputeBody = z.object({ reason: text(2000) });
export type DisputeBody = z.infer<typeof DisputeBody>;

export const ResolveDisputeBody = z.object({
  note: text(2000),
  refund_cents: z.number().int().min(0).max(100_000_000).nullish(),
});
export type ResolveDisputeBody = z.infer<typeof ResolveDisputeBody>;

export const MessageResponse = z.object({
  id: z.number().int(),
  conversation_id: z.number().int(),
  sender_id: z.number().int(),
  body: z.string(),
  read_at: timestamp.nullable(),
  created_at: timestamp,
});
export type MessageResponse = z.infer<typeof MessageResponse>;

export function presentMessage(m: ConversationMessage): MessageResponse {
  return {
    id: m.id,
    conversation_id: m.conversationId,
    sender_id: m.senderId,
    body: m.body,
    read_at: iso(m.readAt),
    created_at: iso(m.createdAt),
  };
}

const Party = z.object({ id: z.number().int(), first_name: z.string(), last_name: z.string() });

export const ConversationResponse = z.object({
  id: z.number().int(),
  client_id: z.number().int(),
  prestataire_id: z.number().int(),
  client: Party,
  prestataire: Party.extend({ business_name: z.string().nullable() }),
  service_request_id: z.number().int().nullable(),
  appointment_id: z.number().int().nullable(),
  dispute_status: z.enum(DISPUTE_STATUSES),
  dispute: z
    .object({
      reason: z.string().nullable(),
      reported_by: z.number().int().nullable(),
      reported_at: timestamp.nullable(),
      resolution_note: z.string().nullable(),
      refund_cents: z.number().int().nullable(),
      resolved_at: timestamp.nullable(),
    })
    .nullable(),
  last_message: MessageResponse.nullable(),
  /** The messages of the other party the caller has not read (0 for administrators). */
  unread_count: z.number().int(),
  last_message_at: timestamp.nullable(),
  created_at: timestamp,
  updated_at: timestamp,
});
export type ConversationResponse = z.infer<typeof ConversationResponse>;

export function presentConversation(row: ConversationRow): ConversationResponse {
  const c = row.conversation;
  return {
    id: c.id,
    client_id: c.clientId,
    prestataire_id: c.prestataireId,
    client: { id: row.client.id, first_name: row.client.firstName, last_name: row.client.lastName },
    prestataire: {
      id: row.prestataire.id,
      first_name: row.prestataire.firstName,
      last_name: row.prestataire.lastName,
      business_name: row.businessName,
    },
    service_request_id: c.serviceRequestId,
    appointment_id: c.appointmentId,
    dispute_status: c.disputeStatus,
    dispute:
      c.disputeStatus === 'none'
        ? null
        : {
            reason: c.disputeReason,
            reported_by: c.disputeReportedBy,
            reported_at: iso(c.disputeReportedAt),
            resolution_note: c.disputeResolutionNote,
            refund_cents: c.disputeRefundCents,
            resolved_at: iso(c.disputeResolvedAt),
          },
    last_message: row.lastMessage ? presentMessage(row.lastMessage) : null,
    unread_count: row.unreadCount,
    last_message_at: iso(c.lastMessageAt),
    created_at: iso(c.createdAt),
    updated_at: iso(c.updatedAt),
  };
}

export const MessagesMeta = z.object({
  /** Pass as `before` to read the next (older) page; null on the last page. */
  next_before: z.number().int().nullable(),
  has_more: z.boolean(),
  limit: z.number().int(),
});

export const ConversationListEnvelope = z.object({ data: z.array(ConversationResponse), meta: paginationMeta, message: z.string().optional() });
export const MessageListEnvelope = z.object({ data: z.array(MessageResponse), meta: MessagesMeta, message: z.string().optional() });

export const ReadReceipt = z.object({
  conversation_id: z.number().int(),
  reader_id: z.number().int(),
  read_at: timestamp,
  last_read_message_id: z.number().int().nullable(),
});
export const TypingResponse = z.object({ conversation_id: z.number().int(), user_id: z.number().int() });
