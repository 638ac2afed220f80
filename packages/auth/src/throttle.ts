import { AppError } from '@repo/http';
import ipaddr from 'ipaddr.js';

export interface ThrottleOptions {
  /** Failures allowed per key within the window. */
  maxFailures: number;
  windowMs: number;
  /** Keys kept at most; beyond, the oldest are forgotten (memory stays bounded under a flood of keys). */
  maxKeys?: number;
}

interface Bucket {
  failures: number;
  resetAt: number;
}

function retryError(retryAfterMs: number, message: (seconds: number) => string): AppError {
  const retryAfter = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new AppError('rate_limited', message(retryAfter), { headers: { 'retry-after': String(retryAfter) } });
}

/**
 * A Map used as a bounded cache: a write moves the key to the end (the newest), and past `max`
 * keys the oldest are dropped. Map keeps insertion order, so the oldest is always the first.
 */
function boundedSet<V>(map: Map<string, V>, key: string, value: V, max: number) {
  map.delete(key);
  map.set(key, value);
  while (map.size > max) {
    const oldest = map.keys().next().value;
    if (oldest === undefined) break;
    map.delete(oldest);
  }
}

/**
 * Counts failed attempts per key in a fixed window. Kept in memory: the per-minute rate limiter
 * (shared through Redis where configured) bounds what one instance sees.
 */
export function createThrottle(options: ThrottleOptions, now: () => number = Date.now) {
  const buckets = new Map<string, Bucket>();
  const maxKeys = options.maxKeys ?? 50_000;

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
          throw retryError(bucket.resetAt - t, (s) => `Too many failed attempts, retry in ${s} seconds`);
        }
      }
    },
    fail(keys: string[]) {
      const t = now();
      sweep(t);
      for (const key of keys) {
        const bucket = buckets.get(key);
        if (!bucket || bucket.resetAt <= t) boundedSet(buckets, key, { failures: 1, resetAt: t + options.windowMs }, maxKeys);
        else bucket.failures += 1;
      }
    },
    reset(keys: string[]) {
      for (const key of keys) buckets.delete(key);
    },
    /** Keys held now (for tests of the memory bound). */
    size: () => buckets.size,
  };
}

export type Throttle = ReturnType<typeof createThrottle>;

export interface LoginThrottleOptions {
  now?: () => number;
  /** Failures of one (e-mail, IP) pair after which it must wait; each further one doubles the wait. */
  freeFailures?: number;
  /** The wait after the first failure beyond the free ones: 1 s, then 2 s, 4 s … */
  baseDelayMs?: number;
  /** The longest wait a pair is ever given. */
  maxDelayMs?: number;
  /** A pair with no failure for this long starts over. */
  pairMemoryMs?: number;
  /** Failures one IP (an IPv6 /64) may make across every account per window: credential stuffing. */
  ipMaxFailures?: number;
  ipWindowMs?: number;
  /** Pairs and IPs kept at most each; the oldest are forgotten first. */
  maxEntries?: number;
}

interface PairState {
  failures: number;
  lastFailureAt: number;
  blockedUntil: number;
}

/**
 * The client an IP stands for: an IPv4 address, or the /64 of an IPv6 one (a single host is
 * given a whole /64 and can rotate through it at will). IPv4-mapped IPv6 counts as the IPv4.
 */
export function clientKey(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip;
  const parsed = ipaddr.process(ip);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4);
  return `${parts.map((p) => p.toString(16)).join(':')}::/64`;
}

/**
 * The login throttle. Failures are counted per (account e-mail, client IP) pair with growing
 * waits: after `freeFailures` failures the pair waits 1 s, and each further failure doubles the
 * wait (2 s, 4 s … capped at 15 minutes), answered 429 with Retry-After. A pair is never locked for
 * anyone else: the owner signing in from an address that has not failed gets in whatever an
 * attacker does elsewhere. Across accounts, one IP gets `ipMaxFailures` failures per window,
 * against credential stuffing. Memory stays bounded: at most `maxEntries` pairs and IPs each.
 */
export function createLoginThrottle(options: LoginThrottleOptions | (() => number) = {}) {
  const opts = typeof options === 'function' ? { now: options } : options;
  const now = opts.now ?? Date.now;
  const freeFailures = opts.freeFailures ?? 5;
  const baseDelayMs = opts.baseDelayMs ?? 1000;
  const maxDelayMs = opts.maxDelayMs ?? 15 * 60_000;
  const pairMemoryMs = opts.pairMemoryMs ?? 60 * 60_000;
  const maxEntries = opts.maxEntries ?? 50_000;
  const pairs = new Map<string, PairState>();
  const perIp = createThrottle({ maxFailures: opts.ipMaxFailures ?? 100, windowMs: opts.ipWindowMs ?? 15 * 60_000, maxKeys: maxEntries }, now);

  // A NUL cannot occur in a validated e-mail, so the pair key is unambiguous.
  const pairKey = (email: string, ip: string) => `${email.toLowerCase()}\u0000${clientKey(ip)}`;

  function livePair(key: string, t: number) {
    const pair = pairs.get(key);
    if (pair && t - pair.lastFailureAt >= Math.max(pairMemoryMs, pair.blockedUntil - pair.lastFailureAt)) {
      pairs.delete(key);
      return undefined;
    }
    return pair;
  }

  return {
    /** 429 with Retry-After while the pair waits out its delay, or the IP is over its ceiling. */
    check(email: string, ip: string) {
      const t = now();
      const pair = livePair(pairKey(email, ip), t);
      if (pair && pair.blockedUntil > t) {
        throw retryError(pair.blockedUntil - t, (s) => `Too many failed sign-in attempts, retry in ${s} seconds`);
      }
      try {
        perIp.check([clientKey(ip)]);
      } catch (error) {
        if (error instanceof AppError && error.code === 'rate_limited') {
          throw new AppError('rate_limited', 'Too many failed sign-in attempts from this address; retry later', { headers: error.headers });
        }
        throw error;
      }
    },
    fail(email: string, ip: string) {
      const t = now();
      const key = pairKey(email, ip);
      const previous = livePair(key, t);
      const failures = (previous?.failures ?? 0) + 1;
      // The fifth failure waits 1 s, the sixth 2 s …; the exponent is bounded so it never overflows.
      const beyond = failures - freeFailures;
      const delay = beyond >= 0 ? Math.min(maxDelayMs, baseDelayMs * 2 ** Math.min(beyond, 40)) : 0;
      boundedSet(pairs, key, { failures, lastFailureAt: t, blockedUntil: t + delay }, maxEntries);
      perIp.fail([clientKey(ip)]);
    },
    /** A right password forgets the pair's failures; the IP's count across accounts stays. */
    succeed(email: string, ip: string) {
      pairs.delete(pairKey(email, ip));
    },
    /** Entries held now: pairs and IPs (for tests of the memory bound). */
    size: () => ({ pairs: pairs.size, ips: perIp.size() }),
  };
}

export type LoginThrottle = ReturnType<typeof createLoginThrottle>;
