import { bigId, id, iso, NO_NUL_MESSAGE, noNul, paginatedEnvelope, paginationQuery, timestamp, envelope } from '@repo/schemas';
import { z } from 'zod';
import { LOG_LEVELS, type Log } from '../../db/schema/index.js';

const MIN_TIME = Date.parse('1970-01-01T00:00:00Z');
const MAX_TIME = Date.parse('2100-01-01T00:00:00Z');

export const logLevel = z.enum(LOG_LEVELS, { message: `Must be one of: ${LOG_LEVELS.join(', ')}` });

/** An ISO 8601 instant with a zone, within the range a log can sensibly carry. */
export const logTime = z.iso
  .datetime({ offset: true, message: 'Must be an ISO 8601 date-time with a time zone, e.g. 2026-01-02T03:04:05Z' })
  .transform((v) => new Date(v))
  .refine((d) => d.getTime() >= MIN_TIME && d.getTime() < MAX_TIME, 'Must be between 1970 and 2100');

/** Deeper contexts are rejected: serialising them (JSON.stringify, jsonb) overflows stacks, a 500. */
const MAX_CONTEXT_DEPTH = 32;

/**
 * What is wrong with a context, if anything: a NUL in a string or key (jsonb cannot store one), or
 * nesting deeper than MAX_CONTEXT_DEPTH. Walks the value itself: searching its JSON text for
 * `\u0000` would also reject an escaped backslash followed by "u0000", which is ordinary text.
 * Iterative, so that a deeply nested value cannot overflow the stack here either.
 */
export function contextProblem(value: unknown): string | undefined {
  const pending: { value: unknown; depth: number }[] = [{ value, depth: 1 }];
  for (let item = pending.pop(); item; item = pending.pop()) {
    const { value: current, depth } = item;
    if (typeof current === 'string') {
      if (!noNul(current)) return NO_NUL_MESSAGE;
      continue;
    }
    if (current === null || typeof current !== 'object') continue;
    if (depth > MAX_CONTEXT_DEPTH) return `Must not be nested more than ${MAX_CONTEXT_DEPTH} levels deep`;
    if (Array.isArray(current)) {
      for (const inner of current) pending.push({ value: inner, depth: depth + 1 });
    } else {
      for (const [key, inner] of Object.entries(current)) {
        if (!noNul(key)) return NO_NUL_MESSAGE;
        pending.push({ value: inner, depth: depth + 1 });
      }
    }
  }
  return undefined;
}

export const LogEntryBody = z.object({
  level: logLevel,
  message: z.string().min(1, 'Message is required').max(65_536).refine(noNul, NO_NUL_MESSAGE),
  context: z
    .record(z.string(), z.unknown())
    .superRefine((c, ctx) => {
      const problem = contextProblem(c);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .nullish(),
  timestamp: logTime.optional(),
  source: z.string().trim().min(1).max(255).refine(noNul, NO_NUL_MESSAGE).nullish(),
});
export type LogEntryBody = z.infer<typeof LogEntryBody>;

export const BatchBody = z.object({
  logs: z.array(LogEntryBody).min(1, 'Send at least one log entry'),
});

export const ListLogsQuery = paginationQuery({ defaultPerPage: 50, maxPerPage: 500 })
  .extend({
    level: logLevel.optional(),
    from_date: logTime.optional(),
    to_date: logTime.optional(),
    search: z.string().min(1).max(500).refine(noNul, NO_NUL_MESSAGE).optional(),
    pattern_id: id.optional().describe('Logs of one mined pattern (see insights); set by an analysis'),
  })
  .refine((q) => !q.from_date || !q.to_date || q.from_date <= q.to_date, {
    path: ['to_date'],
    message: 'Must not be before from_date',
  });
export type ListLogsQuery = z.infer<typeof ListLogsQuery>;

export const LogParams = z.object({ id: bigId });

export const LogResponse = z.object({
  id: z.number().int(),
  project_id: z.number().int(),
  level: logLevel,
  message: z.string(),
  context: z.record(z.string(), z.unknown()).nullable(),
  source: z.string().nullable(),
  timestamp,
  received_at: timestamp,
  pattern_id: z.number().int().nullable().describe('The mined pattern, once an analysis has covered the log'),
});

export const LogEnvelope = envelope(LogResponse);
export const LogListEnvelope = paginatedEnvelope(LogResponse);
export const BatchEnvelope = envelope(z.object({ accepted: z.number().int() }));

export function presentLog(log: Log) {
  return {
    id: log.id,
    project_id: log.projectId,
    level: log.level,
    message: log.message,
    context: log.context ?? null,
    source: log.source,
    timestamp: iso(log.timestamp),
    received_at: iso(log.receivedAt),
    pattern_id: log.patternId ?? null,
  };
}
