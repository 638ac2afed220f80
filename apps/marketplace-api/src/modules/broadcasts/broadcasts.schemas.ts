import { id, iso, paginationQuery, storableText, timestamp, UNSTORABLE_TEXT_MESSAGE, unstorableTextPaths } from '@repo/schemas';
import { z } from 'zod';
import { BROADCAST_AUDIENCES, BROADCAST_STATUSES, type Broadcast } from '../../db/schema/index.js';

/** The largest `data` a broadcast carries to every notification, as JSON. */
const DATA_MAX_BYTES = 4096;

export const BroadcastParams = z.object({ broadcast: id });

export const BroadcastsQuery = paginationQuery({ defaultPerPage: 20, maxPerPage: 100 });

export const CreateBroadcastBody = z.object({
  audience: z.enum(BROADCAST_AUDIENCES).describe('all (clients and prestataires), clients or prestataires'),
  city_id: z
    .number()
    .int()
    .min(1)
    .max(2_147_483_647)
    .optional()
    .describe("Only this city's users: prestataires whose profile is in it, clients who made a service request in it"),
  title: z.string().trim().min(1, 'Must not be empty').max(200).refine(storableText, UNSTORABLE_TEXT_MESSAGE),
  body: z.string().trim().min(1, 'Must not be empty').max(5000).refine(storableText, UNSTORABLE_TEXT_MESSAGE),
  send_email: z.boolean().default(false).describe('Also e-mail each recipient'),
  data: z
    .record(z.string(), z.unknown())
    .refine((d) => unstorableTextPaths(d).length === 0, UNSTORABLE_TEXT_MESSAGE)
    .refine((d) => Buffer.byteLength(JSON.stringify(d)) <= DATA_MAX_BYTES, `Must be at most ${DATA_MAX_BYTES} bytes as JSON`)
    .optional()
    .describe('Carried in every notification’s data, beside broadcast_id'),
});
export type CreateBroadcastBody = z.infer<typeof CreateBroadcastBody>;

export const BroadcastResponse = z.object({
  id: z.number().int(),
  audience: z.enum(BROADCAST_AUDIENCES),
  city_id: z.number().int().nullable(),
  title: z.string(),
  body: z.string(),
  send_email: z.boolean(),
  data: z.record(z.string(), z.unknown()).nullable(),
  status: z.enum(BROADCAST_STATUSES),
  /** The recipients counted when it was made. */
  total_recipients: z.number().int(),
  /** The users notified so far. */
  sent_count: z.number().int(),
  /** The last failure of a batch (retried while the status is queued or sending). */
  error: z.string().nullable(),
  created_by: z.number().int().nullable(),
  created_at: timestamp,
  started_at: timestamp.nullable(),
  completed_at: timestamp.nullable(),
});

export function presentBroadcast(b: Broadcast): z.infer<typeof BroadcastResponse> {
  return {
    id: b.id,
    audience: b.audience,
    city_id: b.cityId,
    title: b.title,
    body: b.body,
    send_email: b.sendEmail,
    data: b.data,
    status: b.status,
    total_recipients: b.totalRecipients,
    sent_count: b.sentCount,
    error: b.error,
    created_by: b.createdBy,
    created_at: iso(b.createdAt),
    started_at: iso(b.startedAt),
    completed_at: iso(b.completedAt),
  };
}
