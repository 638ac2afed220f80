import type { FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses } from '@repo/schemas';
import { actorOf, socketIdOf } from '../../lib/context.js';
import type { ConversationsService } from './conversations.service.js';
import {
  ConversationListEnvelope,
  ConversationParams,
  ConversationResponse,
  ConversationsQuery,
  CreateConversationBody,
  DisputeBody,
  MessageBody,
  MessageListEnvelope,
  MessageResponse,
  MessagesQuery,
  presentConversation,
  presentMessage,
  ReadBody,
  ReadReceipt,
  ResolveDisputeBody,
  TypingResponse,
} from './conversations.schemas.js';

const TAG = 'conversations';

export function conversationsRoutes(deps: { conversations: ConversationsService }): FastifyPluginAsyncZod {
  return async (app) => {
    const service = deps.conversations;
    // Conversations are between a client and a prestataire; administrators read them through /admin.
    const parties = app.auth.requireRole('client', 'prestataire');
    const adminOnly = app.auth.requireRole('admin');
    const security = [{ bearerAuth: [] }];

    app.get(
      '/conversations',
      {
        onRequest: parties,
        schema: {
          operationId: 'listConversations',
          tags: [TAG],
          summary: 'Your conversations, the most recently active first, with their last message and your unread count',
          security,
          querystring: ConversationsQuery,
          response: { 200: ConversationListEnvelope, ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await service.list(actorOf(request), request.query);
        return { data: rows.map(presentConversation), meta };
      },
    );

    app.post(
      '/conversations',
      {
        onRequest: parties,
        schema: {
          operationId: 'createConversation',
          tags: [TAG],
          summary: 'Open a conversation with a prestataire (or a client), optionally about a request or an appointment of you both',
          description:
            'One conversation per pair and subject: when it exists already it is answered (200), with `message` added to it. ' +
            '`participant_id` must be of the other side, and the request or appointment must involve you both (422 otherwise).',
          security,
          body: CreateConversationBody,
          response: { 200: envelope(ConversationResponse), 201: envelope(ConversationResponse), ...errorResponses(400, 401, 403, 422, 429) },
        },
      },
      async (request, reply) => {
        const { row, created } = await service.create(actorOf(request), request.body);
        return reply.status(created ? 201 : 200).send({ data: presentConversation(row), message: created ? 'Conversation started' : 'Conversation' });
      },
    );

    app.get(
      '/conversations/:conversation/messages',
      {
        onRequest: parties,
        schema: {
          operationId: 'listConversationMessages',
          tags: [TAG],
          summary: "A conversation's messages, newest first; `before` (a message id) reads older pages",
          security,
          params: ConversationParams,
          querystring: MessagesQuery,
          response: { 200: MessageListEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        const { messages, meta } = await service.messages(actorOf(request), request.params.conversation, request.query);
        return { data: messages.map(presentMessage), meta };
      },
    );

    app.post(
      '/conversations/:conversation/messages',
      {
        onRequest: parties,
        schema: {
          operationId: 'sendConversationMessage',
          tags: [TAG],
          summary: 'Send a text message',
          security,
          params: ConversationParams,
          body: MessageBody,
          response: { 201: envelope(MessageResponse), ...errorResponses(400, 401, 403, 404, 422, 429) },
        },
      },
      async (request, reply) => {
        const message = await service.send(actorOf(request), request.params.conversation, request.body, socketIdOf(request));
        return reply.status(201).send({ data: presentMessage(message), message: 'Message sent' });
      },
    );

    app.post(
      '/conversations/:conversation/messages/read',
      {
        onRequest: parties,
        schema: {
          operationId: 'markConversationRead',
          tags: [TAG],
          summary: "Mark the other party's messages read, all of them or up to `last_read_message_id`",
          security,
          params: ConversationParams,
          body: ReadBody,
          response: { 200: envelope(ReadReceipt), ...errorResponses(400, 401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        const receipt = await service.markRead(actorOf(request), request.params.conversation, request.body, socketIdOf(request));
        return { data: receipt, message: 'Messages read' };
      },
    );

    app.post(
      '/conversations/:conversation/typing',
      {
        onRequest: parties,
        schema: {
          operationId: 'signalTyping',
          tags: [TAG],
          summary: 'Tell the other party you are typing (a `typing` real-time event)',
          security,
          params: ConversationParams,
          response: { 200: envelope(TypingResponse), ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        const data = await service.typing(actorOf(request), request.params.conversation, socketIdOf(request));
        return { data };
      },
    );

    app.post(
      '/conversations/:conversation/report-dispute',
      {
        onRequest: parties,
        schema: {
          operationId: 'reportConversationDispute',
          tags: [TAG],
          summary: 'Report a dispute to the platform (`dispute_status` none → open); one while another is open answers 409',
          security,
          params: ConversationParams,
          body: DisputeBody,
          response: { 200: envelope(ConversationResponse), ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => {
        const row = await service.reportDispute(actorOf(request), request.params.conversation, request.body);
        return { data: presentConversation(row), message: 'Dispute reported' };
      },
    );

    app.get(
      '/admin/conversations',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminListConversations',
          tags: ['admin'],
          summary: 'All conversations, the most recently active first; `dispute_status=open` lists the disputes to settle',
          security,
          querystring: ConversationsQuery,
          response: { 200: ConversationListEnvelope, ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await service.adminList(actorOf(request), request.query);
        return { data: rows.map(presentConversation), meta };
      },
    );

    app.get(
      '/admin/conversations/:conversation/messages',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminListConversationMessages',
          tags: ['admin'],
          summary: "A conversation's messages, newest first, with cursor paging (`before`)",
          security,
          params: ConversationParams,
          querystring: MessagesQuery,
          response: { 200: MessageListEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        const { messages, meta } = await service.adminMessages(actorOf(request), request.params.conversation, request.query);
        return { data: messages.map(presentMessage), meta };
      },
    );

    app.post(
      '/admin/conversations/:conversation/resolve-dispute',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminResolveConversationDispute',
          tags: ['admin'],
          summary: 'Settle an open dispute with a note and, where decided, a refund of the appointment (made by the payments module)',
          description: '`refund_cents` needs a conversation about an appointment and is at most its price (422 otherwise). Both parties are notified.',
          security,
          params: ConversationParams,
          body: ResolveDisputeBody,
          response: { 200: envelope(ConversationResponse), ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => {
        const row = await service.resolveDispute(actorOf(request), request.params.conversation, request.body);
        return { data: presentConversation(row), message: 'Dispute resolved' };
      },
    );
  };
}
