import { z } from 'zod';
import { ListLogsQuery, type presentLog } from '../logs/index.js';

const list = ListLogsQuery.shape;

/**
 * The list's filters, validated by the same rules (pagination and `pattern_id` aside: a log is
 * streamed as it arrives, before any analysis assigns it a pattern), plus the token for clients
 * that cannot send headers.
 */
export const TailQuery = z
  .object({
    level: list.level,
    from_date: list.from_date,
    to_date: list.to_date,
    search: list.search,
    access_token: z
      .string()
      .min(1)
      .max(4096)
      .optional()
      .describe(
        'The bearer token, for browsers: the WebSocket API cannot set an Authorization header. Prefer the header where the client can send one.',
      ),
  })
  .refine((q) => !q.from_date || !q.to_date || q.from_date <= q.to_date, {
    path: ['to_date'],
    message: 'Must not be before from_date',
  });
export type TailQuery = z.infer<typeof TailQuery>;

export type TailFilters = Pick<TailQuery, 'level' | 'from_date' | 'to_date' | 'search'>;

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
