import { bigId, id, iso, replaceUnstorable, UNSTORABLE_TEXT_MESSAGE, storableText, paginatedEnvelope, paginationQuery, timestamp, envelope } from '@repo/schemas';
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
 * What is wrong with a context, if anything, and where: text jsonb cannot store (a NUL or an
 * unpaired surrogate) in a string or key, or nesting deeper than MAX_CONTEXT_DEPTH. Walks the value itself: searching its JSON text for
 * `\u0000` would also reject an escaped backslash followed by "u0000", which is ordinary text.
 * Iterative, so that a deeply nested value cannot overflow the stack here either.
 */
export function contextProblem(value: unknown): { message: string; path: (string | number)[] } | undefined {
  const pending: { value: unknown; depth: number; path: (string | number)[] }[] = [{ value, depth: 1, path: [] }];
  for (let item = pending.pop(); item; item = pending.pop()) {
    const { value: current, depth, path } = item;
    if (typeof current === 'string') {
      if (!storableText(current)) return { message: UNSTORABLE_TEXT_MESSAGE, path };
      continue;
    }
    if (current === null || typeof current !== 'object') continue;
    if (depth > MAX_CONTEXT_DEPTH) return { message: `Must not be nested more than ${MAX_CONTEXT_DEPTH} levels deep`, path: [] };
    if (Array.isArray(current)) {
      current.forEach((inner, i) => pending.push({ value: inner, depth: depth + 1, path: [...path, i] }));
    } else {
      for (const [key, inner] of Object.entries(current)) {
        // A bad key is named by its replacement-character form, which can be shown and logged.
        if (!storableText(key)) return { message: UNSTORABLE_TEXT_MESSAGE, path: [...path, replaceUnstorable(key)] };
        pending.push({ value: inner, depth: depth + 1, path: [...path, key] });
      }
    }
  }
  return undefined;
}

export const LogEntryBody = z.object({
  level: logLevel,
  message: z.string().min(1, 'Message is required').max(65_536).refine(storableText, UNSTORABLE_TEXT_MESSAGE),
  context: z
    .record(z.string(), z.unknown())
    .superRefine((c, ctx) => {
      const problem = contextProblem(c);
      if (problem) ctx.addIssue({ code: 'custom', message: problem.message, path: problem.path });
    })
    .nullish(),
  timestamp: logTime.optional(),
  source: z.string().trim().min(1).max(255).refine(storableText, UNSTORABLE_TEXT_MESSAGE).nullish(),
});
export type LogEntryBody = z.infer<typeof LogEntryBody>;

export const BatchBody = z.object({
  logs: z.array(LogEntryBody).min(1, 'Send at least one log entry'),
});
export type BatchBody = z.infer<typeof BatchBody>;

const LEVELS: ReadonlySet<unknown> = new Set(LOG_LEVELS);

/** The format logTime checks (z.iso.datetime's own pattern). */
const ISO_INSTANT = z.regexes.datetime({ offset: true });

/** A fractional second of at most microseconds: PostgreSQL reads it exactly as a Date would. */
const FRACTION_WITHIN_MICROSECONDS = /(?:\.\d{1,6})?(?:Z|[+-]\d\d:\d\d)$/;

/**
 * BatchBody's answer for the batches ingestion sees all day, in a fraction of its time (zod
 * walks each entry through a dozen checks and copies it: 8 ms for a thousand entries):
 * the same checks written out, for batches whose every field is in its plainest form. It answers
 * undefined for anything else (a failure, a source with spaces to trim, a timestamp finer than a
 * microsecond), and BatchBody decides: it alone words errors. What it accepts, BatchBody
 * accepts, with the same output; a test holds the two together.
 *
 * Being in plainest form also means the body's JSON text says exactly what was validated, so it
 * can be stored as sent (see insertLogsJson).
 */
export function plainBatch(body: unknown): BatchBody | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const entries = (body as { logs?: unknown }).logs;
  if (!Array.isArray(entries) || entries.length === 0) return undefined;
  const logs: LogEntryBody[] = new Array(entries.length);
  for (let i = 0; i < entries.length; i++) {
    const entry: unknown = entries[i];
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return undefined;
    const { level, message, context, timestamp, source } = entry as Record<string, unknown>;
    if (!LEVELS.has(level)) return undefined;
    if (typeof message !== 'string' || message.length < 1 || message.length > 65_536 || !storableText(message)) return undefined;
    if (context !== undefined && context !== null) {
      if (typeof context !== 'object' || Array.isArray(context) || contextProblem(context) !== undefined) return undefined;
    }
    let time: Date | undefined;
    if (timestamp !== undefined) {
      if (typeof timestamp !== 'string' || !ISO_INSTANT.test(timestamp) || !FRACTION_WITHIN_MICROSECONDS.test(timestamp)) {
        return undefined;
      }
      time = new Date(timestamp);
      if (!(time.getTime() >= MIN_TIME && time.getTime() < MAX_TIME)) return undefined;
    }
    if (source !== undefined && source !== null) {
      if (typeof source !== 'string' || source.length < 1 || source.length > 255 || source.trim() !== source || !storableText(source)) {
        return undefined;
      }
    }
    logs[i] = {
      level: level as LogEntryBody['level'],
      message,
      context: context as LogEntryBody['context'],
      timestamp: time,
      source: source as LogEntryBody['source'],
    };
  }
  return { logs };
}

/** A position in the newest-first order: the last log of a page. Opaque to clients. */
export interface LogCursor {
  /** The log's timestamp in UTC, ISO 8601 to the microsecond (PostgreSQL's precision). */
  timestamp: string;
  id: number;
}

export function encodeCursor(c: LogCursor): string {
  return Buffer.from(`${c.timestamp}|${c.id}`).toString('base64url');
}

const CURSOR_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

const cursorParam = z
  .string()
  .max(200)
  .transform((value, ctx): LogCursor => {
    const [time = '', id] = Buffer.from(value, 'base64url').toString('utf8').split('|');
    const t = CURSOR_TIME.test(time) ? Date.parse(time) : NaN;
    const n = Number(id);
    // Out of range, an instant PostgreSQL cannot read would fail the query: refuse it here.
    if (Number.isNaN(t) || t < MIN_TIME || t >= MAX_TIME || !Number.isSafeInteger(n) || n < 1) {
      ctx.addIssue({ code: 'custom', message: 'Not a cursor this API gave out' });
      return z.NEVER;
    }
    return { timestamp: time, id: n };
  });

/**
 * How deep `page` may go, in logs (the last log of the page): Elasticsearch's `max_result_window`.
 * A page by offset reads every log before it, 1.3 µs each even from the index alone (135 ms for
 * page 2 000 of 50); the cursor reads only its page, at any depth.
 */
export const MAX_OFFSET_WINDOW = 10_000;

export const ListLogsQuery = paginationQuery({ defaultPerPage: 50, maxPerPage: 500 })
  .extend({
    cursor: cursorParam
      .optional()
      .describe('Keyset paging: `meta.next_cursor` of the previous page. Fast at any depth; `page` reaches the 10 000th log at most (422 beyond).'),
    level: logLevel.optional(),
    source: z
      .string()
      .trim()
      .min(1)
      .max(255)
      .refine(storableText, UNSTORABLE_TEXT_MESSAGE)
      .optional()
      .describe('Logs whose `source` is exactly this (after trimming); combined with the other filters'),
    from_date: logTime.optional(),
    to_date: logTime.optional(),
    search: z.string().min(1).max(500).refine(storableText, UNSTORABLE_TEXT_MESSAGE).optional(),
    pattern_id: id.optional().describe('Logs of one mined pattern (see insights); set by an analysis'),
  })
  .refine((q) => !q.from_date || !q.to_date || q.from_date <= q.to_date, {
    path: ['to_date'],
    message: 'Must not be before from_date',
  })
  .refine((q) => !q.cursor || q.page === 1, { path: ['cursor'], message: 'Send either cursor or page, not both' })
  .refine((q) => q.page * q.per_page <= MAX_OFFSET_WINDOW, {
    path: ['page'],
    message: `Pages by number reach the ${MAX_OFFSET_WINDOW.toLocaleString('en')}th log at most: page deeper with cursor (meta.next_cursor), which is as fast at any depth`,
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
export const LogListMeta = z.object({
  current_page: z.number().int(),
  per_page: z.number().int(),
  total: z.number().int(),
  last_page: z.number().int(),
  total_is_estimate: z
    .boolean()
    .describe(
      'Whether `total` and `last_page` are estimates. A list filtered by `level` at most is counted exactly at any size, from counts kept as logs arrive (for projects keeping logs 60 days or less). Others are counted exactly up to 10 000 matches, unless the planner expects far more; a `search` is estimated where counting would cost more than the page: from the share of matches among the newest logs read for it, in the newest slice of time searched for it, or among the older logs read in order after that slice',
    ),
  next_cursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last page'),
});

export const LogListEnvelope = paginatedEnvelope(LogResponse, LogListMeta);
export const BatchEnvelope = envelope(z.object({ accepted: z.number().int() }));

/** A log as answered: with its pattern once an analysis has tagged it. */
export function presentLog(log: Log & { patternId?: number | null }) {
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
