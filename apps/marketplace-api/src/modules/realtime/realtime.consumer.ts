import type { DbTx } from '../../db/index.js';
import type { DomainEvent } from '../../db/schema/index.js';
import { presentAppointment, presentOffer } from '../booking/index.js';
import type { OutboxConsumer } from '../outbox/index.js';
import { paymentRecords, presentPayment } from '../payments/index.js';
import { isSocketId } from './pusher.protocol.js';
import type { RealtimeHub } from './realtime.hub.js';
import { offerRecords } from '../booking/index.js';
import { findAppointment } from './realtime.repository.js';

/** One Pusher event on one channel. */
export interface ChannelEvent {
  channel: string;
  event: string;
  payload: unknown;
}

const userChannel = (id: unknown) => `private-user.${Number(id)}`;
const conversationChannel = (id: unknown) => `private-conversation.${Number(id)}`;
const isId = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) > 0;

/** The payload without the publisher's `socket_id`, which says whom not to send it to and is not news. */
function withoutSocketId(payload: Record<string, unknown>): Record<string, unknown> {
  const { socket_id: _socketId, ...rest } = payload;
  return rest;
}

/**
 * The events of DESIGN.md §8 a domain event becomes: messages, read receipts and typing on the
 * conversation's channel; notifications, offers, appointments and payments on the users' channels,
 * with the resource as it is now (loaded by id). Nothing else is invented.
 */
export async function channelEventsOf(db: DbTx, event: DomainEvent): Promise<ChannelEvent[]> {
  const payload = event.payload as Record<string, unknown>;
  const [kind] = event.type.split('.');
  switch (event.type) {
    case 'message.created': {
      // The message resource, as GET …/messages lists it: the outbox's recipient is for the inbox.
      const { recipient_id: _recipient, ...message } = withoutSocketId(payload);
      return isId(payload.conversation_id) ? [{ channel: conversationChannel(payload.conversation_id), event: 'message.created', payload: message }] : [];
    }
    case 'conversation.read':
      return isId(payload.conversation_id)
        ? [{ channel: conversationChannel(payload.conversation_id), event: 'messages.read', payload: withoutSocketId(payload) }]
        : [];
    case 'conversation.typing':
      return isId(payload.conversation_id)
        ? [
            {
              channel: conversationChannel(payload.conversation_id),
              event: 'typing',
              payload: { conversation_id: payload.conversation_id, user_id: payload.user_id },
            },
          ]
        : [];
    case 'notification.created':
      return isId(payload.user_id) ? [{ channel: userChannel(payload.user_id), event: 'notification.created', payload: withoutSocketId(payload) }] : [];
  }
  if (kind === 'offer' && event.subjectType === 'offer') {
    const row = await offerRecords.findOfferRow(db, event.subjectId);
    if (!row) return [];
    const clientId = isId(payload.client_id) ? payload.client_id : (await offerRecords.findOfferWithRequest(db, event.subjectId))?.request.clientId;
    const name = event.type === 'offer.created' ? 'offer.created' : 'offer.updated';
    const resource = presentOffer(row);
    return [clientId, row.offer.prestataireId].filter(isId).map((id) => ({ channel: userChannel(id), event: name, payload: resource }));
  }
  if (kind === 'appointment' && event.subjectType === 'appointment') {
    const appointment = await findAppointment(db, event.subjectId);
    if (!appointment) return [];
    const resource = presentAppointment(appointment);
    return [appointment.clientId, appointment.prestataireId].map((id) => ({ channel: userChannel(id), event: 'appointment.updated', payload: resource }));
  }
  if (kind === 'payment' && event.subjectType === 'payment') {
    const payment = await paymentRecords.findPayment(db, event.subjectId);
    if (!payment) return [];
    const resource = presentPayment(payment);
    return [payment.clientId, payment.prestataireId].map((id) => ({ channel: userChannel(id), event: 'payment.updated', payload: resource }));
  }
  return [];
}

const WANTED = new Set(['message.created', 'conversation.read', 'conversation.typing', 'notification.created']);

/**
 * Reads the outbox and publishes its real-time events. They are notified inside the transaction
 * that moves the consumer's cursor, so they leave when it commits, and a batch that fails is sent
 * again as a whole. A publisher that passes the `X-Socket-ID` of the request as `socket_id` in the
 * event's payload keeps that connection from hearing its own event.
 */
export function createRealtimeConsumer(deps: { hub: Pick<RealtimeHub, 'publish'> }): OutboxConsumer {
  return {
    name: 'realtime',
    accepts: (event) => WANTED.has(event.type) || /^(offer|appointment|payment)\./.test(event.type),
    async handle(events, tx) {
      for (const event of events) {
        const socketId = (event.payload as { socket_id?: unknown }).socket_id;
        const except = isSocketId(socketId) ? socketId : undefined;
        for (const message of await channelEventsOf(tx, event)) {
          await deps.hub.publish(message.channel, message.event, message.payload, { except, tx });
        }
      }
    },
  };
}
