import { reviews, type Review, type ReviewStatus } from '../src/db/schema/index.js';
import { aBooking, DAY, HOUR, type Booking, type BookingOptions } from './appointment-fixtures.js';
import { unique, type TestApp } from './helpers.js';

/** A completed, paid appointment, in the past (each at its own hour so several of one prestataire never overlap). */
export function aCompletedBooking(t: TestApp, opts: BookingOptions = {}): Promise<Booking> {
  const startsAt = new Date(Math.floor(Date.now() / DAY) * DAY - 30 * DAY + unique() * HOUR);
  return aBooking(t, { startsAt, paidAt: new Date(), ...opts, status: opts.status ?? 'completed' });
}

/** A review written straight through the schema (moderation tests do not depend on the route that creates it). */
export async function aReview(t: TestApp, booking: Booking, opts: { rating?: number; status?: ReviewStatus; createdAt?: Date } = {}): Promise<Review> {
  const [row] = await t.database.db
    .insert(reviews)
    .values({
      appointmentId: booking.appointment.id,
      clientId: booking.client.user.id,
      prestataireId: booking.prestataire.user.id,
      rating: opts.rating ?? 4,
      comment: 'Quick and careful work.',
      status: opts.status ?? 'pending',
      ...(opts.createdAt ? { createdAt: opts.createdAt } : {}),
    })
    .returning();
  return row!;
}
