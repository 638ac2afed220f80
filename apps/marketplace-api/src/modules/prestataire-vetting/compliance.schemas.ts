import { paginationQuery } from '@repo/schemas';
import { z } from 'zod';
import { adminText } from './admin-review.schemas.js';
import { DocumentResponse } from './documents.schemas.js';

export const ExpiringQuery = paginationQuery({ defaultPerPage: 20, maxPerPage: 100 }).extend({
  days: z.coerce.number().int().min(1).max(365).default(30),
});

export const SuspendBody = z.object({ reason: adminText(3, 2000) });

export const ExpiringDocumentResponse = DocumentResponse.extend({
  /** Days until the document expires; negative once it has. */
  days_left: z.number().int(),
  prestataire: z.object({ id: z.number().int(), business_name: z.string(), email: z.string() }),
});
