import { envelope, id, iso, paginatedEnvelope, paginationQuery, timestamp } from '@repo/schemas';
import { z } from 'zod';
import {
  APPOINTMENT_STATUSES,
  OFFER_STATUSES,
  PRICE_ADJUSTMENT_STATUSES,
  SERVICE_REQUEST_STATUSES,
  type ServiceRequestPhoto,
} from '../../../db/schema/index.js';
import { isPublicKey } from '../../../integrations/storage/storage.js';
import { isCalendarDate } from '../../../lib/time.js';
import { mediaUrl } from '../../user-store/index.js';
import type { AppointmentRow, OfferRow, RequestRow } from './admin-views.repository.js';

/** A bound of a range: a calendar day (`2026-11-25`, the platform's time zone) or an instant with its offset. */
const bound = z
  .string()
  .max(40)
  .refine((v) => isCalendarDate(v) || z.iso.datetime({ offset: true }).safeParse(v).success, 'Must be a date (YYYY-MM-DD) or an ISO 8601 instant')
  .describe('A date (YYYY-MM-DD, the platform time zone: `to` includes the whole day) or an ISO 8601 instant');

const rangeQuery = {
  client_id: id.optional(),
  prestataire_id: id.optional(),
  from: bound.optional(),
  to: bound.optional(),
};

export const AdminRequestsQuery = paginationQuery({ defaultPerPage: 20, maxPerPage: 100 }).extend({
  status: z.enum(SERVICE_REQUEST_STATUSES).optional(),
  service_id: id.optional(),
  ...rangeQuery,
});
export type AdminRequestsQuery = z.infer<typeof AdminRequestsQuery>;

export const AdminAppointmentsQuery = paginationQuery({ defaultPerPage: 20, maxPerPage: 100 }).extend({
  status: z.enum(APPOINTMENT_STATUSES).optional(),
  ...rangeQuery,
});
export type AdminAppointmentsQuery = z.infer<typeof AdminAppointmentsQuery>;

export const ServiceRequestParams = z.object({ serviceRequest: id });
export const AppointmentParams = z.object({ appointment: id });

const ClientSummary = z.object({ id: z.number().int(), first_name: z.string(), last_name: z.string(), email: z.string() });
const PrestataireSummary = ClientSummary.extend({ business_name: z.string().nullable() });
const VehicleSummary = z.object({
  id: z.number().int(),
  make: z.string(),
  model: z.string(),
  year: z.number().int(),
  plate: z.string().nullable(),
});
const ServiceSummary = z.object({ id: z.number().int(), slug: z.string(), name: z.string() });

export const AdminRequestResponse = z.object({
  id: z.number().int(),
  status: z.enum(SERVICE_REQUEST_STATUSES),
  description: z.string(),
  latitude: z.number(),
  longitude: z.number(),
  city_id: z.number().int().nullable(),
  preferred_dates: z.array(z.string()),
  prestataire_id: z.number().int().nullable().describe('The prestataire a direct request is aimed at'),
  expires_at: timestamp,
  accepted_at: timestamp.nullable(),
  cancelled_at: timestamp.nullable(),
  cancelled_by: z.number().int().nullable(),
  cancel_reason: z.string().nullable(),
  refusal_reason: z.string().nullable(),
  offers_count: z.number().int(),
  client: ClientSummary,
  vehicle: VehicleSummary,
  service: ServiceSummary,
  created_at: timestamp,
  updated_at: timestamp,
});

export const AdminOfferResponse = z.object({
  id: z.number().int(),
  status: z.enum(OFFER_STATUSES),
  amount_cents: z.number().int(),
  currency: z.literal('EUR'),
  proposed_start_at: timestamp,
  duration_minutes: z.number().int(),
  message: z.string().nullable(),
  valid_until: timestamp,
  decided_at: timestamp.nullable(),
  prestataire: PrestataireSummary,
  created_at: timestamp,
});

const PhotoResponse = z.object({
  id: z.number().int(),
  url: z.string().nullable().describe('Set for photos stored as public files'),
  created_at: timestamp,
});

const PriceAdjustment = z.object({
  amount_cents: z.number().int(),
  reason: z.string().nullable(),
  status: z.enum(PRICE_ADJUSTMENT_STATUSES),
  requested_at: timestamp.nullable(),
});

const Cancellation = z.object({
  reason: z.string().nullable(),
  cancelled_at: timestamp,
  cancelled_by: z.number().int().nullable(),
  fee_cents: z.number().int().nullable(),
});

export const AdminAppointmentResponse = z.object({
  id: z.number().int(),
  service_request_id: z.number().int(),
  offer_id: z.number().int().nullable(),
  status: z.enum(APPOINTMENT_STATUSES),
  starts_at: timestamp,
  ends_at: timestamp,
  price_cents: z.number().int(),
  currency: z.string(),
  started_at: timestamp.nullable(),
  ended_at: timestamp.nullable(),
  completed_at: timestamp.nullable(),
  paid_at: timestamp.nullable(),
  price_adjustment: PriceAdjustment.nullable(),
  cancellation: Cancellation.nullable(),
  client: ClientSummary,
  prestataire: PrestataireSummary,
  vehicle: VehicleSummary,
  service: ServiceSummary,
  created_at: timestamp,
  updated_at: timestamp,
});

export const AdminRequestDetailResponse = AdminRequestResponse.extend({
  offers: z.array(AdminOfferResponse),
  photos: z.array(PhotoResponse),
  appointment: AdminAppointmentResponse.nullable(),
});

export const AdminRequestListEnvelope = paginatedEnvelope(AdminRequestResponse);
export const AdminRequestDetailEnvelope = envelope(AdminRequestDetailResponse);
export const AdminAppointmentListEnvelope = paginatedEnvelope(AdminAppointmentResponse);
export const AdminAppointmentEnvelope = envelope(AdminAppointmentResponse);

type Party = { id: number; firstName: string; lastName: string; email: string };
const presentClient = (c: Party) => ({ id: c.id, first_name: c.firstName, last_name: c.lastName, email: c.email });
const presentPrestataire = (p: Party & { businessName: string | null }) => ({ ...presentClient(p), business_name: p.businessName });

export function presentAdminRequest(row: RequestRow): z.infer<typeof AdminRequestResponse> {
  const r = row.request;
  return {
    id: r.id,
    status: r.status,
    description: r.description,
    latitude: r.latitude,
    longitude: r.longitude,
    city_id: r.cityId,
    preferred_dates: r.preferredDates,
    prestataire_id: r.prestataireId,
    expires_at: iso(r.expiresAt),
    accepted_at: iso(r.acceptedAt),
    cancelled_at: iso(r.cancelledAt),
    cancelled_by: r.cancelledBy,
    cancel_reason: r.cancelReason,
    refusal_reason: r.refusalReason,
    offers_count: row.offersCount,
    client: presentClient(row.client),
    vehicle: row.vehicle,
    service: row.service,
    created_at: iso(r.createdAt),
    updated_at: iso(r.updatedAt),
  };
}

export function presentAdminOffer(row: OfferRow): z.infer<typeof AdminOfferResponse> {
  const o = row.offer;
  return {
    id: o.id,
    status: o.status,
    amount_cents: o.amountCents,
    currency: 'EUR',
    proposed_start_at: iso(o.proposedStartAt),
    duration_minutes: o.durationMinutes,
    message: o.message,
    valid_until: iso(o.validUntil),
    decided_at: iso(o.decidedAt),
    prestataire: presentPrestataire(row.prestataire),
    created_at: iso(o.createdAt),
  };
}

export function presentPhoto(p: ServiceRequestPhoto): z.infer<typeof PhotoResponse> {
  return { id: p.id, url: isPublicKey(p.storageKey) ? mediaUrl(p.storageKey) : null, created_at: iso(p.createdAt) };
}

export function presentAdminAppointment(row: AppointmentRow): z.infer<typeof AdminAppointmentResponse> {
  const a = row.appointment;
  return {
    id: a.id,
    service_request_id: a.serviceRequestId,
    offer_id: a.offerId,
    status: a.status,
    starts_at: iso(a.startsAt),
    ends_at: iso(a.endsAt),
    price_cents: a.priceCents,
    currency: a.currency,
    started_at: iso(a.startedAt),
    ended_at: iso(a.endedAt),
    completed_at: iso(a.completedAt),
    paid_at: iso(a.paidAt),
    price_adjustment:
      a.priceAdjustmentStatus === null
        ? null
        : {
            amount_cents: a.priceAdjustmentAmountCents ?? 0,
            reason: a.priceAdjustmentReason,
            status: a.priceAdjustmentStatus,
            requested_at: iso(a.priceAdjustmentRequestedAt),
          },
    cancellation:
      a.cancelledAt === null
        ? null
        : { reason: a.cancelReason, cancelled_at: iso(a.cancelledAt), cancelled_by: a.cancelledBy, fee_cents: a.cancellationFeeCents },
    client: presentClient(row.client),
    prestataire: presentPrestataire(row.prestataire),
    vehicle: row.vehicle,
    service: row.service,
    created_at: iso(a.createdAt),
    updated_at: iso(a.updatedAt),
  };
}
