import { AppError } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { Appointment, ServiceRequest } from '../../db/schema/index.js';
import type { Caller } from '../../lib/context.js';
import { isExclusionViolation, isUniqueViolation } from '../../lib/db-errors.js';
import { transition, type TransitionDeps } from '../../lib/transitions.js';
import type { AvailabilityService } from './slots/slots.service.js';
import type { Outbox } from '../outbox/index.js';
import { offerMachine, pendingOfferIds } from './offers/offers.repository.js';
import { insertAppointment } from './requests/requests.repository.js';

/** What the lifecycle code asks of the availability engine. */
export type SlotChecker = Pick<AvailabilityService, 'checkSlot'>;

/** The 409 of a request that is still open on paper but past its `expires_at` (the timer has not run yet). */
export function requestExpired(request: ServiceRequest): AppError {
  return new AppError('conflict', `This service request expired at ${request.expiresAt.toISOString()}`, {
    extra: { current_status: request.status },
  });
}

/**
 * Closes the request's other pending offers (`refused`), each through `transition` so each closure
 * is logged and published, in the caller's transaction.
 */
export async function refusePendingOffers(tx: DbTx, deps: TransitionDeps, requestId: number, why: string, exceptId?: number) {
  for (const offerId of await pendingOfferIds(tx, requestId, exceptId)) {
    await transition(tx, deps, offerMachine, offerId, {
      verb: 'refuse',
      from: ['pending'],
      to: 'refused',
      action: 'offer.refused',
      details: { reason: why },
    });
  }
}

/**
 * Inserts the appointment of an accepted request, in the caller's transaction. The prestataire's
 * time is held by the database: a concurrent booking of an overlapping slot that committed first
 * makes this insert fail on the exclusion constraint (409), and so does a second appointment of the
 * same request (its unique index).
 */
export async function insertBooking(
  tx: DbTx,
  deps: { outbox: Outbox; actor: Caller },
  values: Parameters<typeof insertAppointment>[1],
): Promise<Appointment> {
  let appointment: Appointment;
  try {
    appointment = await insertAppointment(tx, values);
  } catch (error) {
    if (isExclusionViolation(error)) throw new AppError('conflict', 'The prestataire is no longer free at that time', { cause: error });
    if (isUniqueViolation(error)) throw new AppError('conflict', 'This service request already has an appointment', { cause: error });
    throw error;
  }
  await deps.outbox.publish(
    deps.actor,
    {
      type: 'appointment.created',
      subject: { type: 'appointment', id: appointment.id },
      payload: {
        service_request_id: appointment.serviceRequestId,
        offer_id: appointment.offerId,
        client_id: appointment.clientId,
        prestataire_id: appointment.prestataireId,
        starts_at: appointment.startsAt.toISOString(),
        ends_at: appointment.endsAt.toISOString(),
        price_cents: appointment.priceCents,
      },
    },
    tx,
  );
  return appointment;
}
