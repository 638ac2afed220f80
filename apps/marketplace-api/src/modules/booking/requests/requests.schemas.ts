import { id, iso, isoDateTime, latitude, longitude, paginationQuery, storableText, timestamp, UNSTORABLE_TEXT_MESSAGE } from '@repo/schemas';
import { z } from 'zod';
import {
  APPOINTMENT_STATUSES,
  PRICE_ADJUSTMENT_STATUSES,
  SERVICE_REQUEST_STATUSES,
  type Appointment,
  type ServiceRequest,
  type ServiceRequestPhoto,
} from '../../../db/schema/index.js';
import { OfferResponse } from '../offers/offers.schemas.js';
import { mediaUrl } from '../../user-store/index.js';

/** An id in a JSON body (an `integer` column). */
const bodyId = z.number().int().min(1).max(2_147_483_647);
const text = (min: number, max: number) =>
  z
    .string()
    .trim()
    .min(min, `Must be at least ${min} characters`)
    .max(max, `Must be at most ${max} characters`)
    .refine(storableText, UNSTORABLE_TEXT_MESSAGE);

export const ServiceRequestParams = z.object({ service_request: id });
/** The spec names the same parameter `{serviceRequest}` on the client, prestataire and photo routes. */
export const ServiceRequestCamelParams = z.object({ serviceRequest: id });

const requestFields = {
  vehicle_id: bodyId,
  service_id: bodyId,
  description: text(10, 5000),
  latitude: latitude.optional(),
  longitude: longitude.optional(),
  city_id: bodyId.optional(),
  preferred_dates: z.array(isoDateTime).max(10, 'At most 10 dates').optional(),
  prestataire_id: bodyId.nullish(),
};

/** Where the work is: coordinates, both of them, or a city whose coordinates are taken. */
function locatedOnce(v: { latitude?: number; longitude?: number; city_id?: number }, ctx: z.RefinementCtx, required: boolean) {
  const hasLat = v.latitude !== undefined;
  const hasLon = v.longitude !== undefined;
  if (hasLat !== hasLon) {
    ctx.addIssue({ code: 'custom', path: [hasLat ? 'longitude' : 'latitude'], message: 'Give both latitude and longitude' });
  } else if (required && !hasLat && v.city_id === undefined) {
    ctx.addIssue({ code: 'custom', path: ['latitude'], message: 'Give latitude and longitude, or a city_id' });
  }
}

export const CreateServiceRequestBody = z.object(requestFields).superRefine((v, ctx) => locatedOnce(v, ctx, true));
export type CreateServiceRequestBody = z.infer<typeof CreateServiceRequestBody>;

/** PATCH: any of the creation's fields; PUT takes the creation's body whole. */
export const PatchServiceRequestBody = z
  .object({
    vehicle_id: bodyId.optional(),
    service_id: bodyId.optional(),
    description: text(10, 5000).optional(),
    latitude: latitude.optional(),
    longitude: longitude.optional(),
    city_id: bodyId.optional(),
    preferred_dates: z.array(isoDateTime).max(10, 'At most 10 dates').optional(),
    prestataire_id: bodyId.nullish(),
  })
  .superRefine((v, ctx) => locatedOnce(v, ctx, false));
export type PatchServiceRequestBody = z.infer<typeof PatchServiceRequestBody>;

export const RequestListQuery = paginationQuery({ defaultPerPage: 20, maxPerPage: 100 }).extend({
  status: z.enum(SERVICE_REQUEST_STATUSES).optional(),
});
export const PrestataireRequestListQuery = RequestListQuery.extend({ service_id: id.optional() });

export const CancelBody = z.object({ reason: text(1, 2000).optional() });
export const AdminCancelBody = z.object({ reason: text(3, 2000) });
export const RefuseBody = z.object({ reason: text(1, 2000).optional() });

/** A targeted prestataire's acceptance of a direct request: when, and (else its own defaults) for how much and how long. */
export const AcceptRequestBody = z.object({
  starts_at: isoDateTime,
  amount_cents: z.number().int().min(0).max(100_000_000).optional(),
  duration_minutes: z.number().int().min(15).max(1440).optional(),
});
export type AcceptRequestBody = z.infer<typeof AcceptRequestBody>;

export const PhotoResponse = z.object({ id: z.number().int(), url: z.string(), created_at: timestamp });

export function presentPhoto(p: ServiceRequestPhoto): z.infer<typeof PhotoResponse> {
  return { id: p.id, url: mediaUrl(p.storageKey)!, created_at: iso(p.createdAt) };
}

export const ServiceRequestResponse = z.object({
  id: z.number().int(),
  client_id: z.number().int(),
  vehicle_id: z.number().int(),
  service_id: z.number().int(),
  prestataire_id: z.number().int().nullable(),
  direct: z.boolean(),
  description: z.string(),
  latitude: z.number(),
  longitude: z.number(),
  city_id: z.number().int().nullable(),
  preferred_dates: z.array(z.string()),
  status: z.enum(SERVICE_REQUEST_STATUSES),
  expires_at: timestamp,
  accepted_at: timestamp.nullable(),
  cancelled_at: timestamp.nullable(),
  cancel_reason: z.string().nullable(),
  refusal_reason: z.string().nullable(),
  created_at: timestamp,
  updated_at: timestamp,
});
export type ServiceRequestResponse = z.infer<typeof ServiceRequestResponse>;

export function presentRequest(r: ServiceRequest): ServiceRequestResponse {
  return {
    id: r.id,
    client_id: r.clientId,
    vehicle_id: r.vehicleId,
    service_id: r.serviceId,
    prestataire_id: r.prestataireId,
    direct: r.prestataireId !== null,
    description: r.description,
    latitude: r.latitude,
    longitude: r.longitude,
    city_id: r.cityId,
    preferred_dates: r.preferredDates,
    status: r.status,
    expires_at: iso(r.expiresAt),
    accepted_at: iso(r.acceptedAt),
    cancelled_at: iso(r.cancelledAt),
    cancel_reason: r.cancelReason,
    refusal_reason: r.refusalReason,
    created_at: iso(r.createdAt),
    updated_at: iso(r.updatedAt),
  };
}

export const AppointmentResponse = z.object({
  id: z.number().int(),
  service_request_id: z.number().int(),
  offer_id: z.number().int().nullable(),
  client_id: z.number().int(),
  prestataire_id: z.number().int(),
  vehicle_id: z.number().int(),
  service_id: z.number().int(),
  starts_at: timestamp,
  ends_at: timestamp,
  price_cents: z.number().int(),
  currency: z.string(),
  status: z.enum(APPOINTMENT_STATUSES),
  price_adjustment: z
    .object({
      amount_cents: z.number().int(),
      reason: z.string().nullable(),
      status: z.enum(PRICE_ADJUSTMENT_STATUSES),
      requested_at: timestamp.nullable(),
    })
    .nullable(),
  created_at: timestamp,
});

export function presentAppointment(a: Appointment): z.infer<typeof AppointmentResponse> {
  return {
    id: a.id,
    service_request_id: a.serviceRequestId,
    offer_id: a.offerId,
    client_id: a.clientId,
    prestataire_id: a.prestataireId,
    vehicle_id: a.vehicleId,
    service_id: a.serviceId,
    starts_at: iso(a.startsAt),
    ends_at: iso(a.endsAt),
    price_cents: a.priceCents,
    currency: a.currency,
    status: a.status,
    price_adjustment:
      a.priceAdjustmentStatus && a.priceAdjustmentAmountCents !== null
        ? {
            amount_cents: a.priceAdjustmentAmountCents,
            reason: a.priceAdjustmentReason,
            status: a.priceAdjustmentStatus,
            requested_at: iso(a.priceAdjustmentRequestedAt),
          }
        : null,
    created_at: iso(a.createdAt),
  };
}

/** A request in a client's list: how many offers it drew, and its appointment once booked. */
export const ClientRequestItem = ServiceRequestResponse.extend({
  offers_count: z.number().int(),
  appointment_id: z.number().int().nullable(),
});

/** A request in a prestataire's list: how far it is, and whether the prestataire has offered on it. */
export const PrestataireRequestItem = ServiceRequestResponse.extend({
  distance_km: z.number().nullable(),
  has_offered: z.boolean(),
});

/** A client's own request in full: its offers (with each prestataire's name and rating), photos, appointment. */
export const ClientRequestDetail = ServiceRequestResponse.extend({
  offers: z.array(OfferResponse),
  photos: z.array(PhotoResponse),
  appointment: AppointmentResponse.nullable(),
});

/** A request as its client, a prestataire that may see it, or an administrator reads it: with photos and the appointment id. */
export const ServiceRequestDetail = ServiceRequestResponse.extend({
  photos: z.array(PhotoResponse),
  appointment_id: z.number().int().nullable(),
});

export const AcceptRequestResponse = z.object({ service_request: ServiceRequestResponse, appointment: AppointmentResponse });
