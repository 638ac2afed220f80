import { id, iso, paginationMeta, paginationQuery, storableText, timestamp, UNSTORABLE_TEXT_MESSAGE } from '@repo/schemas';
import { z } from 'zod';
import { REVIEW_STATUSES } from '../../db/schema/index.js';
import type { ReviewView } from './reviews.repository.js';

export const AppointmentParams = z.object({ appointment: id });
export const ReviewParams = z.object({ review: id });
export const PrestataireParams = z.object({ prestataire: id });

/** Free text, trimmed, within bounds, storable by PostgreSQL. */
const text = (min: number, max: number) =>
  z
    .string()
    .trim()
    .min(min, `Must be at least ${min} characters`)
    .max(max, `Must be at most ${max} characters`)
    .refine(storableText, UNSTORABLE_TEXT_MESSAGE);

export const CreateReviewBody = z.object({
  rating: z.number().int('Must be a whole number').min(1, 'Must be between 1 and 5').max(5, 'Must be between 1 and 5'),
  comment: text(3, 2000),
});
export type CreateReviewBody = z.infer<typeof CreateReviewBody>;

export const RejectReviewBody = z.object({ reason: text(3, 2000) });
export const HideReviewBody = z.object({ reason: text(3, 2000).optional() });

export const AdminReviewsQuery = paginationQuery({ defaultPerPage: 20, maxPerPage: 100 }).extend({
  status: z.enum(REVIEW_STATUSES).optional(),
  rating: z.coerce.number().int('Must be a whole number').min(1, 'Must be between 1 and 5').max(5, 'Must be between 1 and 5').optional(),
  prestataire_id: id.optional(),
});
export type AdminReviewsQuery = z.infer<typeof AdminReviewsQuery>;

export const PublicReviewsQuery = paginationQuery({ defaultPerPage: 20, maxPerPage: 100 });
export type PublicReviewsQuery = z.infer<typeof PublicReviewsQuery>;

/** The reviewer as the public sees it: a first name and the initial of the last. */
const ReviewerResponse = z.object({ id: z.number().int(), first_name: z.string(), last_name_initial: z.string() });

export const ReviewResponse = z.object({
  id: z.number().int(),
  appointment_id: z.number().int(),
  prestataire_id: z.number().int(),
  client: ReviewerResponse,
  rating: z.number().int(),
  comment: z.string(),
  status: z.enum(REVIEW_STATUSES),
  created_at: timestamp,
});
export type ReviewResponse = z.infer<typeof ReviewResponse>;

/** What moderation sees besides: the prestataire and the last moderation. */
export const AdminReviewResponse = ReviewResponse.extend({
  prestataire: z.object({ id: z.number().int(), business_name: z.string().nullable() }),
  moderated_by: z.number().int().nullable(),
  moderated_at: timestamp.nullable(),
  /** The reason given when the review was rejected or hidden. */
  rejection_reason: z.string().nullable(),
  updated_at: timestamp,
});
export type AdminReviewResponse = z.infer<typeof AdminReviewResponse>;

const count = z.number().int();
export const PublicReviewsMeta = paginationMeta.extend({
  /** The average of the approved reviews (null without any), as search sorts by it. */
  rating_average: z.number().nullable(),
  rating_count: count,
  /** How many approved reviews give each rating. */
  rating_distribution: z.object({ '1': count, '2': count, '3': count, '4': count, '5': count }),
});

function initial(lastName: string): string {
  const first = [...lastName.trim()][0];
  return first ? `${first.toUpperCase()}.` : '';
}

export function presentReview(v: ReviewView): ReviewResponse {
  const r = v.review;
  return {
    id: r.id,
    appointment_id: r.appointmentId,
    prestataire_id: r.prestataireId,
    client: { id: v.client.id, first_name: v.client.firstName, last_name_initial: initial(v.client.lastName) },
    rating: r.rating,
    comment: r.comment,
    status: r.status,
    created_at: iso(r.createdAt),
  };
}

export function presentAdminReview(v: ReviewView): AdminReviewResponse {
  const r = v.review;
  return {
    ...presentReview(v),
    prestataire: { id: r.prestataireId, business_name: v.businessName },
    moderated_by: r.moderatedBy,
    moderated_at: iso(r.moderatedAt),
    rejection_reason: r.rejectionReason,
    updated_at: iso(r.updatedAt),
  };
}
