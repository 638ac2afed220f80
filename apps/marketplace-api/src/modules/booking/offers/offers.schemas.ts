import { id, iso, isoDateTime, storableText, timestamp, UNSTORABLE_TEXT_MESSAGE } from '@repo/schemas';
import { z } from 'zod';
import { OFFER_STATUSES } from '../../../db/schema/index.js';
import type { OfferRow } from './offers.repository.js';

export const OfferParams = z.object({ offer: id });
export const RequestOffersParams = z.object({ serviceRequest: id });

/** The terms of an offer: `POST /service-requests/{id}/offers` and `PUT /offers/{id}` (DESIGN.md §6). */
export const OfferBody = z.object({
  amount_cents: z.number().int().min(1).max(100_000_000),
  proposed_start_at: isoDateTime,
  duration_minutes: z.number().int().min(15).max(1440),
  message: z.string().trim().max(2000).refine(storableText, UNSTORABLE_TEXT_MESSAGE).nullish(),
  valid_until: isoDateTime.optional(),
});
export type OfferBody = z.infer<typeof OfferBody>;

export const OfferResponse = z.object({
  id: z.number().int(),
  service_request_id: z.number().int(),
  prestataire_id: z.number().int(),
  prestataire: z.object({
    id: z.number().int(),
    business_name: z.string().nullable(),
    rating_average: z.number().nullable(),
    rating_count: z.number().int(),
  }),
  amount_cents: z.number().int(),
  currency: z.string(),
  proposed_start_at: timestamp,
  proposed_end_at: timestamp,
  duration_minutes: z.number().int(),
  message: z.string().nullable(),
  valid_until: timestamp,
  status: z.enum(OFFER_STATUSES),
  decided_at: timestamp.nullable(),
  created_at: timestamp,
  updated_at: timestamp,
});
export type OfferResponse = z.infer<typeof OfferResponse>;

export function presentOffer(row: OfferRow): OfferResponse {
  const o = row.offer;
  return {
    id: o.id,
    service_request_id: o.serviceRequestId,
    prestataire_id: o.prestataireId,
    prestataire: {
      id: o.prestataireId,
      business_name: row.businessName,
      rating_average: row.ratingAverage,
      rating_count: row.ratingCount ?? 0,
    },
    amount_cents: o.amountCents,
    currency: 'EUR',
    proposed_start_at: iso(o.proposedStartAt),
    proposed_end_at: iso(new Date(o.proposedStartAt.getTime() + o.durationMinutes * 60_000)),
    duration_minutes: o.durationMinutes,
    message: o.message,
    valid_until: iso(o.validUntil),
    status: o.status,
    decided_at: iso(o.decidedAt),
    created_at: iso(o.createdAt),
    updated_at: iso(o.updatedAt),
  };
}
