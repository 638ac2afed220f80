import { envelope, iso, timestamp } from '@repo/schemas';
import { z } from 'zod';
import { APPOINTMENT_STATUSES, OFFER_STATUSES, SERVICE_REQUEST_STATUSES } from '../../db/schema/index.js';
import { isCalendarDate } from '../../lib/time.js';
import type { AgendaRow, NewRequestRow, PendingOfferRow } from './home.repository.js';

/** The longest agenda one call may ask for, in days (both ends included). */
export const MAX_AGENDA_DAYS = 62;

const localDate = z
  .string()
  .refine(isCalendarDate, 'Must be a date (YYYY-MM-DD)')
  .describe("A calendar day in the prestataire's time zone");

export const AgendaQuery = z.object({
  from: localDate.optional().describe("First day (default today in the prestataire's time zone)"),
  to: localDate.optional().describe('Last day, included (default seven days after `from`)'),
  include_cancelled: z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .default(false),
});
export type AgendaQuery = z.infer<typeof AgendaQuery>;

export const AgendaItem = z.object({
  id: z.number().int(),
  service_request_id: z.number().int(),
  status: z.enum(APPOINTMENT_STATUSES),
  starts_at: timestamp,
  ends_at: timestamp,
  price_cents: z.number().int(),
  currency: z.string(),
  client: z.object({ id: z.number().int(), first_name: z.string() }),
  vehicle: z.object({ id: z.number().int(), make: z.string(), model: z.string(), plate: z.string().nullable() }),
  service: z.object({ id: z.number().int(), name: z.string() }),
});

export const AgendaEnvelope = z.object({
  data: z.array(AgendaItem),
  meta: z.object({ timezone: z.string(), from: z.string(), to: z.string() }),
});

const NewRequestItem = z.object({
  id: z.number().int(),
  status: z.enum(SERVICE_REQUEST_STATUSES),
  direct: z.boolean().describe('Aimed at this prestataire alone'),
  description: z.string(),
  preferred_dates: z.array(z.string()),
  distance_km: z.number().nullable(),
  service: z.object({ id: z.number().int(), name: z.string() }),
  vehicle: z.object({ make: z.string(), model: z.string(), year: z.number().int() }),
  expires_at: timestamp,
  created_at: timestamp,
});

const PendingOfferItem = z.object({
  id: z.number().int(),
  status: z.enum(OFFER_STATUSES),
  amount_cents: z.number().int(),
  currency: z.literal('EUR'),
  proposed_start_at: timestamp,
  duration_minutes: z.number().int(),
  valid_until: timestamp,
  created_at: timestamp,
  service_request: z.object({ id: z.number().int(), status: z.enum(SERVICE_REQUEST_STATUSES) }),
  service: z.object({ id: z.number().int(), name: z.string() }),
});

export const HomeResponse = z.object({
  new_requests: z.array(NewRequestItem).describe('At most 10, newest first'),
  pending_offers: z.array(PendingOfferItem).describe('At most 10, newest first'),
  today_appointments: z.array(AgendaItem),
  counts: z.object({
    new_requests: z.number().int(),
    pending_offers: z.number().int(),
    today_appointments: z.number().int(),
    unread_notifications: z.number().int(),
  }),
  timezone: z.string(),
  today: z.string(),
});
export const HomeEnvelope = envelope(HomeResponse);

export function presentAgendaItem(row: AgendaRow): z.infer<typeof AgendaItem> {
  const a = row.appointment;
  return {
    id: a.id,
    service_request_id: a.serviceRequestId,
    status: a.status,
    starts_at: iso(a.startsAt),
    ends_at: iso(a.endsAt),
    price_cents: a.priceCents,
    currency: a.currency,
    client: { id: row.client.id, first_name: row.client.firstName },
    vehicle: row.vehicle,
    service: row.service,
  };
}

export function presentNewRequest(row: NewRequestRow, prestataireId: number): z.infer<typeof NewRequestItem> {
  const r = row.request;
  return {
    id: r.id,
    status: r.status,
    direct: r.prestataireId === prestataireId,
    description: r.description,
    preferred_dates: r.preferredDates,
    distance_km: row.distanceKm === null ? null : Math.round(row.distanceKm * 10) / 10,
    service: row.service,
    vehicle: row.vehicle,
    expires_at: iso(r.expiresAt),
    created_at: iso(r.createdAt),
  };
}

export function presentPendingOffer(row: PendingOfferRow): z.infer<typeof PendingOfferItem> {
  const o = row.offer;
  return {
    id: o.id,
    status: o.status,
    amount_cents: o.amountCents,
    currency: 'EUR',
    proposed_start_at: iso(o.proposedStartAt),
    duration_minutes: o.durationMinutes,
    valid_until: iso(o.validUntil),
    created_at: iso(o.createdAt),
    service_request: row.request,
    service: row.service,
  };
}
