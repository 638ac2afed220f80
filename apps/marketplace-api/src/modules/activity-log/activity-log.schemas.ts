import { id, iso, paginatedEnvelope, paginationQuery, timestamp } from '@repo/schemas';
import { z } from 'zod';
import { DAY_MS } from '../../lib/time.js';
import type { UpperBound } from '../../lib/time-bounds.js';
import type { ActivityRow } from './activity-log.repository.js';

const isoDate = z.iso.date();
const isoDateTime = z.iso.datetime({ offset: true });
const BOUND_MESSAGE = 'Must be an ISO 8601 date (2026-01-31) or date-time with an offset (2026-01-31T09:00:00Z)';

function parseInstant(value: string, ctx: z.RefinementCtx): { at: Date; dateOnly: boolean } | null {
  const dateOnly = isoDate.safeParse(value).success;
  if (!dateOnly && !isoDateTime.safeParse(value).success) {
    ctx.addIssue({ code: 'custom', message: BOUND_MESSAGE });
    return null;
  }
  const at = new Date(dateOnly ? `${value}T00:00:00Z` : value);
  // Outside this range the instant is a typing mistake, and far years do not round-trip through the drivers.
  const year = at.getUTCFullYear();
  if (year < 1970 || year > 2100) {
    ctx.addIssue({ code: 'custom', message: 'Must be between the years 1970 and 2100' });
    return null;
  }
  return { at, dateOnly };
}

/** The start of a time range: `2026-01-31` (that day's midnight, UTC) or an ISO instant, inclusive. */
export const lowerBound = z
  .string()
  .trim()
  .transform((value, ctx) => {
    const parsed = parseInstant(value, ctx);
    return parsed ? parsed.at : z.NEVER;
  })
  .describe('From this date (2026-01-31, UTC) or instant (2026-01-31T09:00:00Z), inclusive');

/** The end of a time range: `2026-01-31` (the whole day) or an ISO instant, inclusive. */
export const upperBound = z
  .string()
  .trim()
  .transform((value, ctx): UpperBound => {
    const parsed = parseInstant(value, ctx);
    if (!parsed) return z.NEVER;
    return parsed.dateOnly ? { at: new Date(parsed.at.getTime() + DAY_MS), inclusive: false } : { at: parsed.at, inclusive: true };
  })
  .describe('Up to this date (2026-01-31, the whole day, UTC) or instant (2026-01-31T18:00:00Z), inclusive');

/** Whether a range's start lies after its end (reported on the end field). */
export function rangeReversed(from: Date | undefined, to: UpperBound | undefined): boolean {
  if (!from || !to) return false;
  return to.inclusive ? from > to.at : from >= to.at;
}

export const ListActivityQuery = paginationQuery({ defaultPerPage: 50, maxPerPage: 100 })
  .extend({
    actor_id: id.optional(),
    subject_type: z
      .string()
      .trim()
      .regex(/^[a-z][a-z_]{0,49}$/, 'Must be a subject type such as user or prestataire')
      .optional(),
    subject_id: id.optional(),
    action: z
      .string()
      .trim()
      .regex(/^[a-z][a-z0-9_.]{0,99}$/, 'Must be an action (user.status_changed) or a prefix ending with a dot (user.)')
      .describe('An exact action (user.status_changed), or a prefix ending with a dot (user.)')
      .optional(),
    from: lowerBound.optional(),
    to: upperBound.optional(),
  })
  .refine((q) => !rangeReversed(q.from, q.to), { message: 'Must not be before from', path: ['to'] });
export type ListActivityQuery = z.infer<typeof ListActivityQuery>;

export const ActivityEntryResponse = z.object({
  id: z.number().int(),
  actor: z
    .object({
      id: z.number().int(),
      name: z.string(),
      role: z.string().nullable(),
    })
    .nullable(),
  action: z.string(),
  subject_type: z.string(),
  subject_id: z.number().int().nullable(),
  before: z.record(z.string(), z.unknown()).nullable(),
  after: z.record(z.string(), z.unknown()).nullable(),
  ip: z.string().nullable(),
  request_id: z.string().nullable(),
  created_at: timestamp,
});
export type ActivityEntryResponse = z.infer<typeof ActivityEntryResponse>;

export const ActivityListEnvelope = paginatedEnvelope(ActivityEntryResponse);

export function presentActivity(row: ActivityRow): ActivityEntryResponse {
  const { entry } = row;
  return {
    id: entry.id,
    // The actor's row outlives them (anonymised), so the name is the current one: "Deleted user" after deletion.
    actor:
      entry.actorId === null
        ? null
        : { id: entry.actorId, name: `${row.actorFirstName ?? ''} ${row.actorLastName ?? ''}`.trim(), role: entry.actorRole },
    action: entry.action,
    subject_type: entry.subjectType,
    subject_id: entry.subjectId,
    before: entry.before,
    after: entry.after,
    ip: entry.ip,
    request_id: entry.requestId,
    created_at: iso(entry.createdAt),
  };
}
