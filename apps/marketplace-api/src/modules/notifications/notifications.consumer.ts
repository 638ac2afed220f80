import type { FastifyBaseLogger } from 'fastify';
import type { DbTx } from '../../db/index.js';
import type { DomainEvent } from '../../db/schema/index.js';
import type { PushSender } from '../../integrations/push/push.js';
import { systemActor } from '../../lib/context.js';
import type { Outbox, OutboxConsumer } from '../outbox/index.js';
import { NOTIFICATION_CATALOGUE, type Audience } from './notifications.catalogue.js';
import * as repo from './notifications.repository.js';
import { presentNotification } from './notifications.schemas.js';

/** The ids a notification's `data` carries when its event names them, for the apps to link to. */
const LINK_KEYS = ['service_request_id', 'offer_id', 'appointment_id', 'conversation_id', 'payment_id'] as const;

const num = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) ? v : null);

type Parties = { clientId: number | null; prestataireId: number | null };

async function partiesOf(tx: DbTx, event: DomainEvent): Promise<Parties | undefined> {
  const p = event.payload;
  switch (event.subjectType) {
    case 'appointment':
      return repo.appointmentParties(tx, event.subjectId);
    case 'service_request':
      return repo.requestParties(tx, event.subjectId);
    case 'offer':
      return repo.offerParties(tx, event.subjectId);
    case 'conversation':
      return repo.conversationParties(tx, event.subjectId);
    default: {
      // A payment names its appointment, or its parties directly.
      const appointmentId = num(p.appointment_id);
      if (appointmentId !== null) return repo.appointmentParties(tx, appointmentId);
      return { clientId: num(p.client_id), prestataireId: num(p.prestataire_id) };
    }
  }
}

async function audienceOf(tx: DbTx, to: Audience, event: DomainEvent): Promise<number[]> {
  let ids: (number | null)[];
  if (to === 'subject_user') ids = [event.subjectId];
  else if (to === 'recipient') ids = [num(event.payload.recipient_id)];
  else {
    const parties = await partiesOf(tx, event);
    if (!parties) return [];
    ids = to === 'client' ? [parties.clientId] : to === 'prestataire' ? [parties.prestataireId] : [parties.clientId, parties.prestataireId];
  }
  // Nobody is told about their own move.
  return [...new Set(ids.filter((id): id is number => id !== null && id !== event.actorId))];
}

function linkData(event: DomainEvent): Record<string, unknown> {
  const data: Record<string, unknown> = { event: event.type, [`${event.subjectType}_id`]: event.subjectId };
  for (const key of LINK_KEYS) {
    const value = num(event.payload[key]);
    if (value !== null && data[key] === undefined) data[key] = value;
  }
  if (event.type === 'message.created') data.message_id = num(event.payload.id);
  return data;
}

/**
 * Makes the in-app notifications of the domain events the catalogue knows, for the right users in
 * their language, and publishes `notification.created` for each (real-time and push read it). The
 * notification remembers its event, so a batch delivered again never notifies twice.
 */
export function createNotificationsConsumer(deps: { outbox: Outbox }): OutboxConsumer {
  return {
    name: 'notifications',
    accepts: (event) => Object.hasOwn(NOTIFICATION_CATALOGUE, event.type),
    async handle(events, tx) {
      for (const event of events) {
        const entry = NOTIFICATION_CATALOGUE[event.type];
        if (!entry) continue;
        const users = await repo.recipients(tx, await audienceOf(tx, entry.to, event));
        const data = linkData(event);
        const created = await repo.insertFromEvent(
          tx,
          users.map((user) => ({ userId: user.id, type: event.type, ...entry.text[user.lang](event.payload), data, eventId: event.id })),
        );
        if (created.length === 0) continue;
        await deps.outbox.publish(
          systemActor,
          created.map((n) => ({
            type: 'notification.created',
            subject: { type: 'user', id: n.userId },
            payload: { ...presentNotification(n), user_id: n.userId },
          })),
          tx,
        );
      }
    },
  };
}

/**
 * Sends each new notification to its user's web-push subscriptions; a subscription the push service
 * answers 404/410 for is removed. A failed send is not retried: a notification stays in the inbox.
 */
export function createWebPushConsumer(deps: { sender: PushSender; log: FastifyBaseLogger }): OutboxConsumer {
  return {
    name: 'web-push',
    accepts: (event) => event.type === 'notification.created',
    async handle(events, tx) {
      for (const event of events) {
        const { user_id: _userId, ...notification } = event.payload;
        const subscriptions = await repo.webPushSubscriptions(tx, event.subjectId);
        const payload = JSON.stringify(notification);
        await Promise.all(
          subscriptions.map(async (subscription) => {
            if (!subscription.keys) return;
            const outcome = await deps.sender.send({ endpoint: subscription.endpoint, keys: subscription.keys }, payload);
            if (outcome === 'gone') await repo.deleteDevice(tx, subscription.id);
            else if (outcome === 'failed') deps.log.warn({ device: subscription.id }, 'web push failed');
          }),
        );
      }
    },
  };
}
