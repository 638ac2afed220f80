import { envelope, timestamp } from '@repo/schemas';
import { z } from 'zod';
import { ListLogsQuery, type presentLog } from '../logs/index.js';

const list = ListLogsQuery.shape;

/** What begins every tail ticket, so that one is recognised in a URL, a log or a leak report. */
export const TICKET_PREFIX = 'ltt_';

/**
 * The list's filters, validated by the same rules (pagination and `pattern_id` aside: a log is
 * streamed as it arrives, before any analysis assigns it a pattern), plus the ticket or the token
 * for clients that cannot send headers.
 */
export const TailQuery = z
  .object({
    level: list.level,
    source: list.source,
    from_date: list.from_date,
    to_date: list.to_date,
    search: list.search,
    ticket: z
      .string()
      .min(1)
      .max(128)
      .optional()
      .describe(
        'A single-use ticket from `POST /projects/{project_id}/logs/tail/tickets`, valid 30 seconds: how a browser opens the tail (the WebSocket API cannot set an Authorization header). Ignored when an Authorization header is sent.',
      ),
    access_token: z
      .string()
      .min(1)
      .max(4096)
      .optional()
      .describe(
        'The bearer token itself, the older way for browsers: a URL can end up in proxy logs and browser history, and this token stays valid for the whole session. Prefer `ticket`, or the header where the client can send one.',
      ),
  })
  .refine((q) => !q.from_date || !q.to_date || q.from_date <= q.to_date, {
    path: ['to_date'],
    message: 'Must not be before from_date',
  });
export type TailQuery = z.infer<typeof TailQuery>;

export type TailFilters = Pick<TailQuery, 'level' | 'source' | 'from_date' | 'to_date' | 'search'>;

export const TailTicketResponse = z.object({
  ticket: z.string().describe('Opaque and single-use: pass it as `ticket` when opening the tail of this project'),
  expires_at: timestamp.describe('Unusable from then on (30 seconds after issue)'),
});
export const TailTicketEnvelope = envelope(TailTicketResponse);

/** What the server sends, one JSON text frame each. */
export type TailFrame = { type: 'ready' } | { type: 'log'; data: ReturnType<typeof presentLog> };

/** WebSocket close codes beyond the standard ones; 44xx mirror the HTTP statuses. */
export const CLOSE = {
  /** The peer fell too far behind (standard code "try again later"). */
  slowConsumer: 1013,
  /** The session ended (logout, expiry, account deletion). */
  sessionEnded: 4401,
  /** The caller is no longer a member of the project, or it was deleted. */
  notMember: 4404,
} as const;
