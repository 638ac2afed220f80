import { systemActor } from '../../lib/context.js';
import type { OutboxConsumer } from '../outbox/outbox.js';
import type { PaymentsService } from './payments.service.js';

/**
 * Transfers the prestataire's share when an appointment completes (by its client or the
 * auto-completion timer). The transfer runs in the consumer's transaction: a failure leaves the
 * cursor where it was, and the next delivery retries with the same idempotency key.
 */
export function paymentsOutboxConsumer(deps: { payments: PaymentsService }): OutboxConsumer {
  return {
    name: 'payments.transfers',
    accepts: (event) => event.type === 'appointment.completed' && event.subjectType === 'appointment',
    async handle(events, tx) {
      for (const event of events) await deps.payments.onAppointmentCompleted(tx, systemActor, event.subjectId);
    },
  };
}
