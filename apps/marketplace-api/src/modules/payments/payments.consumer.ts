import { systemActor } from '../../lib/context.js';
import type { DomainEvent } from '../../db/schema/index.js';
import type { OutboxConsumer } from '../outbox/index.js';
import type { PaymentsService } from './payments.service.js';

const DISPUTE_EVENTS = new Set(['conversation.dispute_reported', 'conversation.dispute_resolved']);

/** The appointment a conversation's dispute is about, when it is about one. */
function disputedAppointment(event: DomainEvent): number | undefined {
  const id = event.payload.appointment_id;
  return typeof id === 'number' ? id : undefined;
}

/**
 * Transfers the prestataire's share when an appointment completes (by its client or the
 * auto-completion timer), and holds it while a dispute reported in the appointment's conversation
 * is open (released when an administrator resolves it; a refund decided then is made through
 * `POST /admin/payments/{id}/refund`). Runs in the consumer's transaction, which only commits the
 * transfer's money move: the processor is called after it, by the money moves' worker, never
 * inside it.
 */
export function paymentsOutboxConsumer(deps: { payments: PaymentsService }): OutboxConsumer {
  return {
    name: 'payments.transfers',
    accepts: (event) =>
      (event.type === 'appointment.completed' && event.subjectType === 'appointment') ||
      (DISPUTE_EVENTS.has(event.type) && disputedAppointment(event) !== undefined),
    async handle(events, tx) {
      for (const event of events) {
        if (event.type === 'appointment.completed') {
          await deps.payments.onAppointmentCompleted(tx, systemActor, event.subjectId);
          continue;
        }
        const appointmentId = disputedAppointment(event)!;
        if (event.type === 'conversation.dispute_reported') await deps.payments.holdTransfer(systemActor, appointmentId, 'conversation_dispute', tx);
        else await deps.payments.releaseTransfer(systemActor, appointmentId, tx);
      }
    },
  };
}
