import { and, asc, eq, inArray, isNotNull, lt, notExists, sql } from 'drizzle-orm';
import { QueryBuilder } from 'drizzle-orm/pg-core';
import { appointments, conversations, offers, serviceRequests } from '../../../db/schema/index.js';
import type { MoveTargets } from '../../../lib/transitions.js';

/**
 * The rows the timers move, as targets of `transitionMany`. A batch's due rows are taken oldest
 * first with `FOR UPDATE SKIP LOCKED` (rows another instance is moving now are left to it); the
 * rows that follow them (the offers of an expired request, the request of a completed appointment)
 * are waited for. Every move is conditional on its `from` states, so with several instances running
 * at once a row moves once, and a row a user moved meanwhile stays as the user left it.
 */

const qb = new QueryBuilder();

/** Requests past `expires_at` (the move keeps those still open or quoted). */
export const dueRequests = (limit: number): MoveTargets => ({
  where: lt(serviceRequests.expiresAt, sql`now()`),
  orderBy: [asc(serviceRequests.expiresAt), asc(serviceRequests.id)],
  limit,
  skipLocked: true,
});

/** The offers of these requests (the move keeps the pending ones). */
export const offersOfRequests = (requestIds: readonly number[]): MoveTargets =>
  requestIds.length === 0 ? [] : { where: inArray(offers.serviceRequestId, [...requestIds]) };

/** Offers past `valid_until`. */
export const dueOffers = (limit: number): MoveTargets => ({
  where: lt(offers.validUntil, sql`now()`),
  orderBy: [asc(offers.validUntil), asc(offers.id)],
  limit,
  skipLocked: true,
});

/** Appointments paid more than `days` days ago, but those whose conversation has a dispute open. */
export const completableAppointments = (days: number, limit: number): MoveTargets => ({
  where: and(
    isNotNull(appointments.paidAt),
    lt(appointments.paidAt, sql`now() - make_interval(days => ${days}::int)`),
    notExists(
      qb
        .select({ one: sql`1` })
        .from(conversations)
        .where(and(eq(conversations.appointmentId, appointments.id), eq(conversations.disputeStatus, 'open'))),
    ),
  ),
  orderBy: [asc(appointments.paidAt), asc(appointments.id)],
  limit,
  skipLocked: true,
});
