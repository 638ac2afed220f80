import { id, iso, storableText, UNSTORABLE_TEXT_MESSAGE, paginationQuery, timestamp } from '@repo/schemas';
import { z } from 'zod';
import { DOCUMENT_TYPES, VALIDATION_STATUSES, type PrestataireProfile, type User } from '../../db/schema/index.js';
import { DocumentResponse, RequiredDocumentResponse } from './documents.schemas.js';
import { presentUser, UserResponse } from '../user-store/index.js';

/** Free text from an admin, shown to the prestataire. */
export const adminText = (min: number, max: number) =>
  z
    .string()
    .trim()
    .min(min, `Must be at least ${min} characters`)
    .max(max, `Must be at most ${max} characters`)
    .refine(storableText, UNSTORABLE_TEXT_MESSAGE);

export const PrestataireParams = z.object({ prestataire: id });

/** The two states in which a prestataire waits on the platform. */
export const QUEUE_STATUSES = ['pending', 'documents_requested'] as const;

export const QueueQuery = paginationQuery({ defaultPerPage: 20, maxPerPage: 100 }).extend({
  status: z.enum(QUEUE_STATUSES).default('pending'),
});

export const ValidateBody = z.object({ note: adminText(1, 2000).optional() });
export type ValidateBody = z.infer<typeof ValidateBody>;

export const RejectBody = z.object({ reason: adminText(3, 2000) });
export type RejectBody = z.infer<typeof RejectBody>;

export const RequestDocumentsBody = z.object({
  document_types: z
    .array(z.enum(DOCUMENT_TYPES))
    .min(1, 'Name at least one document')
    .max(DOCUMENT_TYPES.length * 2)
    .transform((types) => [...new Set(types)]),
  message: adminText(1, 2000).optional(),
});
export type RequestDocumentsBody = z.infer<typeof RequestDocumentsBody>;

export const QueueItemResponse = z.object({
  user: z.object({
    id: z.number().int(),
    first_name: z.string(),
    last_name: z.string(),
    email: z.string(),
    created_at: timestamp,
  }),
  profile: z.object({
    business_name: z.string(),
    siret: z.string(),
    postal_code: z.string(),
    city: z.string(),
    validation_status: z.enum(VALIDATION_STATUSES),
    validation_note: z.string().nullable(),
    updated_at: timestamp,
  }),
  documents_count: z.number().int(),
});

export function presentQueueItem(user: User, profile: PrestataireProfile, documentsCount: number): z.infer<typeof QueueItemResponse> {
  return {
    user: { id: user.id, first_name: user.firstName, last_name: user.lastName, email: user.email, created_at: iso(user.createdAt) },
    profile: {
      business_name: profile.businessName,
      siret: profile.siret,
      postal_code: profile.postalCode,
      city: profile.city,
      validation_status: profile.validationStatus,
      validation_note: profile.validationNote,
      updated_at: iso(profile.updatedAt),
    },
    documents_count: documentsCount,
  };
}

export const PrestataireDetailResponse = z.object({
  user: UserResponse,
  suspended_at: timestamp.nullable(),
  documents: z.array(DocumentResponse),
  required: z.array(RequiredDocumentResponse),
  /** Every required document is provided and unexpired. */
  complete: z.boolean(),
});

/** The prestataire after a validation decision. */
export const DecisionResponse = z.object({ user: UserResponse, suspended_at: timestamp.nullable() });

export function presentDecision(result: { user: User; profile: PrestataireProfile }): z.infer<typeof DecisionResponse> {
  return { user: presentUser(result.user, result.profile), suspended_at: iso(result.profile.suspendedAt) };
}
