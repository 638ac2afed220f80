import { AppError } from '@repo/http';

export interface ThrottleOptions {
  /** Failures allowed per key within the window. */
  maxFailures: number;
  windowMs: number;
}

interface Bucket {
  failures: number;
  resetAt: number;
}

/**
 * Counts failed attempts per key (an e-mail, an IP) in a fixed window. Kept in memory: the
 * per-minute rate limiter (shared through Redis where configured) bounds what one instance sees.
 */
export function createThrottle(options: ThrottleOptions, now: () => number = Date.now) {
  const buckets = new Map<string, Bucket>();

  function sweep(t: number) {
    if (buckets.size < 10_000) return;
    for (const [key, bucket] of buckets) if (bucket.resetAt <= t) buckets.delete(key);
  }

  return {
    /** Throws 429 with Retry-After when any key is over its budget. */
    check(keys: string[]) {
      const t = now();
      for (const key of keys) {
        const bucket = buckets.get(key);
        if (bucket && bucket.resetAt > t && bucket.failures >= options.maxFailures) {
          const retryAfter = Math.max(1, Math.ceil((bucket.resetAt - t) / 1000));
          throw new AppError('rate_limited', `Too many failed attempts, retry in ${retryAfter} seconds`, {
            headers: { 'retry-after': String(retryAfter) },
          });
        }
      }
    },
    fail(keys: string[]) {
      const t = now();
      sweep(t);
      for (const key of keys) {
        const bucket = buckets.get(key);
        if (!bucket || bucket.resetAt <= t) buckets.set(key, { failures: 1, resetAt: t + options.windowMs });
        else bucket.failures += 1;
      }
    },
    reset(keys: string[]) {
      for (const key of keys) buckets.delete(key);
    },
  };
}

export type Throttle = ReturnType<typeof createThrottle>;

/** The login throttle of DESIGN.md: per e-mail and, more loosely, per IP. */
export function createLoginThrottle(now?: () => number) {
  const perEmail = createThrottle({ maxFailures: 5, windowMs: 15 * 60_000 }, now);
  const perIp = createThrottle({ maxFailures: 50, windowMs: 15 * 60_000 }, now);
  return {
    check(email: string, ip: string) {
      perEmail.check([email]);
      perIp.check([ip]);
    },
    fail(email: string, ip: string) {
      perEmail.fail([email]);
      perIp.fail([ip]);
    },
    succeed(email: string) {
      perEmail.reset([email]);
    },
  };
}

export type LoginThrottle = ReturnType<typeof createLoginThrottle>;
