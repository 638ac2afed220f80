import { id, iso, isoDateTime, paginationQuery, storableText, timestamp, UNSTORABLE_TEXT_MESSAGE } from '@repo/schemas';
import { z } from 'zod';
import { APPOINTMENT_STATUSES, PRICE_ADJUSTMENT_STATUSES } from '../../../db/schema/index.js';
import type { AppointmentView } from './appointments.repository.js';

export const AppointmentParams = z.object({ appointment: id });

/** Free text a party writes for the other (a cancellation's reason, an adjustment's). */
const partyText = (min: number, max: number) =>
  z
    .string()
    .trim()
    .min(min, `Must be at least ${min} characters`)
    .max(max, `Must be at most ${max} characters`)
    .refine(storableText, UNSTORABLE_TEXT_MESSAGE);

export const ListAppointmentsQuery = paginationQuery({ defaultPerPage: 20, maxPerPage: 100 })
  .extend({
    status: z.enum(APPOINTMENT_STATUSES).optional(),
    /** Appointments starting at or after this instant. */
    from: isoDateTime.optional(),
    /** Appointments starting before this instant. */
    to: isoDateTime.optional(),
  })
  .refine((q) => !q.from || !q.to || q.from <= q.to, { path: ['to'], message: 'Must not be before from' });
export type ListAppointmentsQuery = z.infer<typeof ListAppointmentsQuery>;

export const RescheduleBody = z.object({ starts_at: isoDateTime });
export type RescheduleBody = z.infer<typeof RescheduleBody>;

export const CancelBody = z.object({ reason: partyText(3, 2000) });
export type CancelBody = z.infer<typeof CancelBody>;

export const PriceAdjustmentBody = z.object({
  /** The new total price in cents (what `price_cents` becomes once the client accepts). */
  amount_cents: z.number().int().min(0).max(100_000_000),
  reason: partyText(3, 2000),
});
export type PriceAdjustmentBody = z.infer<typeof PriceAdjustmentBody>;

export const PriceAdjustmentResponse = z.object({
  amount_cents: z.number().int(),
  reason: z.string(),
  status: z.enum(PRICE_ADJUSTMENT_STATUSES),
  requested_at: timestamp,
});

export const AppointmentResponse = z.object({
  id: z.number().int(),
  service_request_id: z.number().int(),
  offer_id: z.number().int().nullable(),
  client_id: z.number().int(),
  prestataire_id: z.number().int(),
  vehicle_id: z.number().int(),
  service_id: z.number().int(),
  status: z.enum(APPOINTMENT_STATUSES),
  starts_at: timestamp,
  ends_at: timestamp,
  price_cents: z.number().int(),
  currency: z.string(),
  price_adjustment: PriceAdjustmentResponse.nullable(),
  client: z.object({ id: z.number().int(), first_name: z.string(), last_name: z.string() }),
  prestataire: z.object({
    id: z.number().int(),
    first_name: z.string(),
    last_name: z.string(),
    business_name: z.string().nullable(),
    timezone: z.string(),
  }),
  vehicle: z.object({ id: z.number().int(), make: z.string(), model: z.string(), year: z.number().int(), plate: z.string().nullable() }),
  service: z.object({ id: z.number().int(), name: z.string() }),
  started_at: timestamp.nullable(),
  ended_at: timestamp.nullable(),
  completed_at: timestamp.nullable(),
  paid_at: timestamp.nullable(),
  cancelled_at: timestamp.nullable(),
  /** Who cancelled: one of the parties or the platform's administration. */
  cancelled_by: z.enum(['client', 'prestataire', 'admin']).nullable(),
  cancel_reason: z.string().nullable(),
  /** What a late cancellation by the client costs (0 when on time or by another party); null until cancelled. */
  cancellation_fee_cents: z.number().int().nullable(),
  created_at: timestamp,
  updated_at: timestamp,
});
export type AppointmentResponse = z.infer<typeof AppointmentResponse>;

export function presentAppointment(v: AppointmentView): AppointmentResponse {
  const a = v.appointment;
  const adjustment =
    a.priceAdjustmentStatus && a.priceAdjustmentAmountCents !== null && a.priceAdjustmentRequestedAt
      ? {
          amount_cents: a.priceAdjustmentAmountCents,
          reason: a.priceAdjustmentReason ?? '',
          status: a.priceAdjustmentStatus,
          requested_at: iso(a.priceAdjustmentRequestedAt),
        }
      : null;
  const cancelledBy =
    a.cancelledAt === null || a.cancelledBy === null ? null : a.cancelledBy === a.clientId ? 'client' : a.cancelledBy === a.prestataireId ? 'prestataire' : 'admin';
  return {
    id: a.id,
    service_request_id: a.serviceRequestId,
    offer_id: a.offerId,
    client_id: a.clientId,
    prestataire_id: a.prestataireId,
    vehicle_id: a.vehicleId,
    service_id: a.serviceId,
    status: a.status,
    starts_at: iso(a.startsAt),
    ends_at: iso(a.endsAt),
    price_cents: a.priceCents,
    currency: a.currency,
    price_adjustment: adjustment,
    client: { id: v.client.id, first_name: v.client.firstName, last_name: v.client.lastName },
    prestataire: {
      id: v.prestataire.id,
      first_name: v.prestataire.firstName,
      last_name: v.prestataire.lastName,
      business_name: v.prestataire.businessName,
      timezone: v.prestataire.timezone ?? 'Europe/Paris',
    },
    vehicle: v.vehicle,
    service: v.service,
    started_at: iso(a.startedAt),
    ended_at: iso(a.endedAt),
    completed_at: iso(a.completedAt),
    paid_at: iso(a.paidAt),
    cancelled_at: iso(a.cancelledAt),
    cancelled_by: cancelledBy,
    cancel_reason: a.cancelReason,
    cancellation_fee_cents: a.cancellationFeeCents,
    created_at: iso(a.createdAt),
    updated_at: iso(a.updatedAt),
  };
}
