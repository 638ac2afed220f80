import { and, asc, eq, inArray, isNotNull, lt, notExists, sql } from 'drizzle-orm';
import type { DbTx } from '../../../db/index.js';
import { appointments, conversations, offers, serviceRequests, type OfferStatus, type ServiceRequestStatus } from '../../../db/schema/index.js';

/**
 * The timers' moves. Each claims its due rows with `FOR UPDATE SKIP LOCKED` (rows another instance
 * is moving now are left to it), then moves them with a conditional update (`… AND status IN
 * (…)`), so with several instances running at once a row is moved once. Both run in the caller's
 * transaction; the claim answers the state each row leaves, for the log.
 */

const EXPIRABLE_REQUEST: ServiceRequestStatus[] = ['open', 'quoted'];

export async function claimExpiredRequests(tx: DbTx, limit: number) {
  return tx
    .select({ id: serviceRequests.id, status: serviceRequests.status })
    .from(serviceRequests)
    .where(and(inArray(serviceRequests.status, EXPIRABLE_REQUEST), lt(serviceRequests.expiresAt, sql`now()`)))
    .orderBy(asc(serviceRequests.expiresAt), asc(serviceRequests.id))
    .limit(limit)
    .for('update', { skipLocked: true });
}

export async function expireRequests(tx: DbTx, ids: number[]) {
  if (ids.length === 0) return [];
  return tx
    .update(serviceRequests)
    .set({ status: 'expired', updatedAt: sql`now()` })
    .where(and(inArray(serviceRequests.id, ids), inArray(serviceRequests.status, EXPIRABLE_REQUEST)))
    .returning({ id: serviceRequests.id });
}

/** The pending offers of requests that have just expired: they expire with them. */
export async function expireOffersOfRequests(tx: DbTx, requestIds: number[]) {
  if (requestIds.length === 0) return [];
  return tx
    .update(offers)
    .set({ status: 'expired', decidedAt: sql`now()`, updatedAt: sql`now()` })
    .where(and(inArray(offers.serviceRequestId, requestIds), eq(offers.status, 'pending')))
    .returning({ id: offers.id, serviceRequestId: offers.serviceRequestId });
}

export async function claimExpiredOffers(tx: DbTx, limit: number) {
  return tx
    .select({ id: offers.id, serviceRequestId: offers.serviceRequestId })
    .from(offers)
    .where(and(eq(offers.status, 'pending' satisfies OfferStatus), lt(offers.validUntil, sql`now()`)))
    .orderBy(asc(offers.validUntil), asc(offers.id))
    .limit(limit)
    .for('update', { skipLocked: true });
}

export async function expireOffers(tx: DbTx, ids: number[]) {
  if (ids.length === 0) return [];
  return tx
    .update(offers)
    .set({ status: 'expired', decidedAt: sql`now()`, updatedAt: sql`now()` })
    .where(and(inArray(offers.id, ids), eq(offers.status, 'pending')))
    .returning({ id: offers.id, serviceRequestId: offers.serviceRequestId });
}

/** Ended appointments paid more than `days` days ago, but those whose conversation has a dispute open. */
export async function claimCompletableAppointments(tx: DbTx, days: number, limit: number) {
  return tx
    .select({ id: appointments.id, serviceRequestId: appointments.serviceRequestId })
    .from(appointments)
    .where(
      and(
        eq(appointments.status, 'ended'),
        isNotNull(appointments.paidAt),
        lt(appointments.paidAt, sql`now() - make_interval(days => ${days}::int)`),
        notExists(
          tx
            .select({ one: sql`1` })
            .from(conversations)
            .where(and(eq(conversations.appointmentId, appointments.id), eq(conversations.disputeStatus, 'open'))),
        ),
      ),
    )
    .orderBy(asc(appointments.paidAt), asc(appointments.id))
    .limit(limit)
    .for('update', { skipLocked: true });
}

export async function completeAppointments(tx: DbTx, ids: number[]) {
  if (ids.length === 0) return [];
  return tx
    .update(appointments)
    .set({ status: 'completed', completedAt: sql`now()`, updatedAt: sql`now()` })
    .where(and(inArray(appointments.id, ids), eq(appointments.status, 'ended')))
    .returning({ id: appointments.id, serviceRequestId: appointments.serviceRequestId, priceCents: appointments.priceCents });
}

/** The requests of appointments that have just completed. */
export async function completeRequests(tx: DbTx, ids: number[]) {
  if (ids.length === 0) return [];
  return tx
    .update(serviceRequests)
    .set({ status: 'completed', updatedAt: sql`now()` })
    .where(and(inArray(serviceRequests.id, ids), eq(serviceRequests.status, 'accepted')))
    .returning({ id: serviceRequests.id });
}
