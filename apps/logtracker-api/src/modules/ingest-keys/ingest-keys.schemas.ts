import { envelope, id, iso, timestamp } from '@repo/schemas';
import { z } from 'zod';
import type { IngestKey } from '../../db/schema/index.js';

export const CreateIngestKeyBody = z.object({
  name: z.string().trim().min(1, 'Name is required').max(100),
});

export const IngestKeyParams = z.object({ project_id: id, key_id: id });

export const IngestKeyResponse = z.object({
  id: z.number().int(),
  project_id: z.number().int(),
  name: z.string(),
  prefix: z.string().describe('The first characters of the key, to recognise it; the key itself is never shown again'),
  created_at: timestamp,
  last_used_at: timestamp.nullable(),
  revoked_at: timestamp.nullable(),
});

export const CreatedIngestKeyEnvelope = envelope(
  IngestKeyResponse.extend({
    key: z.string().describe('The secret key: shown once, store it in your CI secrets now'),
  }),
);
export const IngestKeyEnvelope = envelope(IngestKeyResponse);
export const IngestKeyListEnvelope = envelope(z.array(IngestKeyResponse));

export function presentIngestKey(key: IngestKey) {
  return {
    id: key.id,
    project_id: key.projectId,
    name: key.name,
    prefix: key.prefix,
    created_at: iso(key.createdAt),
    last_used_at: iso(key.lastUsedAt),
    revoked_at: iso(key.revokedAt),
  };
}
