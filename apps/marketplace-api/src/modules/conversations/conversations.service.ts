import { withTransaction } from '@repo/db';
import { AppError, pageMeta, pageOffset } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { Actor } from '../../lib/context.js';
import { illegalMove, transition, type TransitionDeps } from '../../lib/transitions.js';
import type { ActivityRecorder } from '../activity-log/index.js';
import type { Outbox } from '../outbox/index.js';
import * as repo from './conversations.repository.js';
import {
  presentMessage,
  type ConversationsQuery,
  type CreateConversationBody,
  type DisputeBody,
  type MessageBody,
  type MessagesQuery,
  type ReadBody,
  type ResolveDisputeBody,
} from './conversations.schemas.js';

const subjectOf = (id: number) => ({ type: 'conversation', id });

/**
 * Conversations between a client and a prestataire (DESIGN.md §6). Only the two parties see one
 * (anyone else: 404); every change is published to the outbox, which the notifications and the
 * real-time delivery read, so this module calls no other.
 */
/**
 * What a dispute's resolution refunds through (the payments module): the refund is committed in the
 * resolution's transaction, then made at the processor once it has committed.
 */
export interface DisputeRefunds {
  requestDisputeRefund(tx: DbTx, actor: Actor, input: { appointmentId: number; conversationId: number; amountCents: number; reason: string }): Promise<number>;
  runMove(id: number): Promise<unknown>;
}

export function createConversationsService(deps: { db: DbTx; recorder: ActivityRecorder; outbox: Outbox; refunds?: DisputeRefunds; now?: () => Date }) {
  const { db, recorder, outbox } = deps;
  const now = deps.now ?? (() => new Date());
  const moveDeps = (actor: Actor): TransitionDeps => ({ recorder, outbox, actor });

  /** The conversation when the actor is one of its parties; 404 otherwise (no existence leak). */
  async function ownConversation(tx: DbTx, actor: Actor, id: number) {
    const row = await repo.findConversationRow(tx, id, actor.userId, repo.partyOf(actor.userId));
    if (!row) throw AppError.notFound('Conversation');
    return row;
  }

  async function anyConversation(tx: DbTx, id: number) {
    const row = await repo.findConversationRow(tx, id, null);
    if (!row) throw AppError.notFound('Conversation');
    return row;
  }

  async function page(tx: DbTx, conversationId: number, query: MessagesQuery) {
    const rows = await repo.listMessages(tx, conversationId, query.before, query.limit + 1);
    const hasMore = rows.length > query.limit;
    const messages = rows.slice(0, query.limit);
    return { messages, meta: { next_before: hasMore ? (messages.at(-1)?.id ?? null) : null, has_more: hasMore, limit: query.limit } };
  }

  /** The real-time consumer leaves out the connection that caused an event (Laravel's toOthers). */
  const toOthers = (socketId?: string) => (socketId ? { socket_id: socketId } : {});

  async function appendMessage(tx: DbTx, actor: Actor, conversationId: number, body: string, recipientId: number, socketId?: string) {
    const message = await repo.insertMessage(tx, { conversationId, senderId: actor.userId, body });
    await outbox.publish(
      actor,
      {
        type: 'message.created',
        subject: subjectOf(conversationId),
        payload: { ...presentMessage(message), recipient_id: recipientId, ...toOthers(socketId) },
      },
      tx,
    );
    return message;
  }

  const otherParty = (row: repo.ConversationRow, userId: number) =>
    row.conversation.clientId === userId ? row.conversation.prestataireId : row.conversation.clientId;

  return {
    async list(actor: Actor, query: ConversationsQuery) {
      const { rows, total } = await repo.listConversations(
        db,
        { where: repo.partyOf(actor.userId), disputeStatus: query.dispute_status },
        actor.userId,
        query.per_page,
        pageOffset(query.page, query.per_page),
      );
      return { rows, meta: pageMeta(query.page, query.per_page, total) };
    },

    /**
     * Opens the conversation of the actor and `participant_id` about the subject, or answers the one
     * they already have (`created: false`); the optional first message is added either way.
     */
    async create(actor: Actor, body: CreateConversationBody) {
      return withTransaction(db, async (tx) => {
        const other = await repo.findLiveUser(tx, body.participant_id);
        const otherRole = actor.role === 'client' ? 'prestataire' : 'client';
        if (!other || other.role !== otherRole || other.id === actor.userId) {
          throw AppError.validation({ participant_id: [`Must be a ${otherRole}`] });
        }
        const clientId = actor.role === 'client' ? actor.userId : other.id;
        const prestataireId = actor.role === 'client' ? other.id : actor.userId;
        const serviceRequestId = body.service_request_id ?? null;
        const appointmentId = body.appointment_id ?? null;
        if (appointmentId !== null) {
          const appointment = await repo.findAppointmentParties(tx, appointmentId);
          if (!appointment || appointment.clientId !== clientId || appointment.prestataireId !== prestataireId) {
            throw AppError.validation({ appointment_id: ['Must be an appointment between you and the participant'] });
          }
          if (serviceRequestId !== null && appointment.serviceRequestId !== serviceRequestId) {
            throw AppError.validation({ service_request_id: ["Must be the appointment's service request"] });
          }
        }
        if (serviceRequestId !== null && !(await repo.requestInvolves(tx, serviceRequestId, clientId, prestataireId))) {
          throw AppError.validation({ service_request_id: ['Must be a service request between you and the participant'] });
        }
        const key = { clientId, prestataireId, serviceRequestId, appointmentId };
        const inserted = await repo.insertConversation(tx, key);
        // A concurrent creation of the same conversation makes the insert a no-op: answer that one.
        const conversation = inserted ?? (await repo.findBySubject(tx, key));
        if (!conversation) throw new Error('conversation vanished after a conflicting insert');
        if (inserted) {
          await recorder.record(actor, 'conversation.created', subjectOf(inserted.id), { after: repo.disputeMachine.audit(inserted) }, tx);
        }
        if (body.message) await appendMessage(tx, actor, conversation.id, body.message, other.id);
        return { row: await ownConversation(tx, actor, conversation.id), created: Boolean(inserted) };
      });
    },

    async messages(actor: Actor, conversationId: number, query: MessagesQuery) {
      await ownConversation(db, actor, conversationId);
      return page(db, conversationId, query);
    },

    /** `socketId`: the sender's real-time connection (X-Socket-ID), which does not get its own message back. */
    async send(actor: Actor, conversationId: number, body: MessageBody, socketId?: string) {
      return withTransaction(db, async (tx) => {
        const row = await ownConversation(tx, actor, conversationId);
        return appendMessage(tx, actor, conversationId, body.body, otherParty(row, actor.userId), socketId);
      });
    },

    /** Marks the other party's messages read, all of them or up to `last_read_message_id`. */
    async markRead(actor: Actor, conversationId: number, body: ReadBody, socketId?: string) {
      return withTransaction(db, async (tx) => {
        await ownConversation(tx, actor, conversationId);
        const upTo = body?.last_read_message_id ?? undefined;
        if (upTo !== undefined && !(await repo.findMessage(tx, conversationId, upTo))) {
          throw AppError.validation({ last_read_message_id: ['Must be a message of this conversation'] });
        }
        const readAt = now();
        const last = await repo.markRead(tx, conversationId, actor.userId, upTo, readAt);
        const receipt = { conversation_id: conversationId, reader_id: actor.userId, read_at: readAt.toISOString(), last_read_message_id: last };
        await outbox.publish(actor, { type: 'conversation.read', subject: subjectOf(conversationId), payload: { ...receipt, ...toOthers(socketId) } }, tx);
        return receipt;
      });
    },

    async typing(actor: Actor, conversationId: number, socketId?: string) {
      return withTransaction(db, async (tx) => {
        await ownConversation(tx, actor, conversationId);
        const payload = { conversation_id: conversationId, user_id: actor.userId };
        await outbox.publish(actor, { type: 'conversation.typing', subject: subjectOf(conversationId), payload: { ...payload, ...toOthers(socketId) } }, tx);
        return payload;
      });
    },

    /** `none` → `open`; a dispute already open (or settled) answers 409 with the current status. */
    async reportDispute(actor: Actor, conversationId: number, body: DisputeBody) {
      return withTransaction(db, async (tx) => {
        await ownConversation(tx, actor, conversationId);
        await transition(tx, moveDeps(actor), repo.disputeMachine, conversationId, {
          verb: 'report a dispute on',
          from: ['none'],
          to: 'open',
          action: 'conversation.dispute_reported',
          set: () => ({ disputeReason: body.reason, disputeReportedBy: actor.userId, disputeReportedAt: now() }),
        });
        return ownConversation(tx, actor, conversationId);
      });
    },

    async adminList(_actor: Actor, query: ConversationsQuery) {
      const { rows, total } = await repo.listConversations(
        db,
        { disputeStatus: query.dispute_status },
        null,
        query.per_page,
        pageOffset(query.page, query.per_page),
      );
      return { rows, meta: pageMeta(query.page, query.per_page, total) };
    },

    async adminMessages(_actor: Actor, conversationId: number, query: MessagesQuery) {
      await anyConversation(db, conversationId);
      return page(db, conversationId, query);
    },

    /**
     * `open` → `resolved` with the administrator's note. A `refund_cents` decided is committed with
     * the resolution, in its transaction, as a refund of the appointment's payment whose origin is this
     * conversation: a double submit answers 409 and refunds once. The processor is called after the
     * commit (the payments worker finishes it if that call fails).
     */
    async resolveDispute(actor: Actor, conversationId: number, body: ResolveDisputeBody) {
      const refund = body.refund_cents ?? null;
      const { conversation, moveId } = await withTransaction(db, async (tx) => {
        const row = await anyConversation(tx, conversationId);
        if (row.conversation.disputeStatus !== 'open') {
          throw illegalMove(repo.disputeMachine, 'resolve the dispute of', row.conversation.disputeStatus, ['open']);
        }
        let moveId: number | null = null;
        if (refund !== null && refund > 0) {
          const appointmentId = row.conversation.appointmentId;
          const appointment = appointmentId === null ? undefined : await repo.findAppointmentParties(tx, appointmentId);
          if (!appointment || appointmentId === null) throw AppError.validation({ refund_cents: ['Only a conversation about an appointment can refund'] });
          if (refund > appointment.priceCents) {
            throw AppError.validation({ refund_cents: [`Must be at most the appointment's price (${appointment.priceCents})`] });
          }
          if (!deps.refunds) throw AppError.validation({ refund_cents: ['Refunds are not available'] });
          moveId = await deps.refunds.requestDisputeRefund(tx, actor, {
            appointmentId,
            conversationId,
            amountCents: refund,
            reason: `Dispute resolved: ${body.note}`.slice(0, 500),
          });
        }
        await transition(tx, moveDeps(actor), repo.disputeMachine, conversationId, {
          verb: 'resolve the dispute of',
          from: ['open'],
          to: 'resolved',
          action: 'conversation.dispute_resolved',
          set: () => ({ disputeResolutionNote: body.note, disputeRefundCents: refund, disputeResolvedBy: actor.userId, disputeResolvedAt: now() }),
        });
        return { conversation: await anyConversation(tx, conversationId), moveId };
      });
      if (moveId !== null) await deps.refunds!.runMove(moveId);
      return conversation;
    },
  };
}

export type ConversationsService = ReturnType<typeof createConversationsService>;
