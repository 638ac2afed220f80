export interface Backoff {
  /** The first retry's ceiling; each further attempt doubles it. */
  baseMs: number;
  /** The ceiling's ceiling. */
  maxMs: number;
}

export const DEFAULT_BACKOFF: Backoff = { baseMs: 200, maxMs: 30_000 };

/**
 * How long to wait before retry number `attempt` (0 for the first): exponential backoff with full
 * jitter (a random wait between zero and the attempt's ceiling, so that many senders cut off at
 * once do not come back at once), never shorter than what the server asked for with Retry-After.
 */
export function retryDelay(attempt: number, backoff: Backoff, retryAfterMs?: number, random: () => number = Math.random): number {
  const ceiling = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.min(attempt, 30));
  const jittered = Math.floor(random() * ceiling);
  return retryAfterMs === undefined ? jittered : Math.max(retryAfterMs, jittered);
}

/** Retry-After in milliseconds: a number of seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (!value) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
