import { AppError } from '@repo/http';
import ipaddr from 'ipaddr.js';
import { memoryCounters, type CounterSource } from './counters.js';

export interface ThrottleOptions {
  /** Failures allowed per key within the window. */
  maxFailures: number;
  windowMs: number;
  /** Keys kept at most in memory; beyond, the oldest are forgotten (memory stays bounded under a flood of keys). */
  maxKeys?: number;
  /** Where the counts live: shared by every instance (see sharedCounters), or this process's memory by default. */
  counters?: CounterSource;
  /** The counters' namespace (default `throttle`): throttles sharing a store keep apart by it. */
  namespace?: string;
}

function retryError(retryAfterMs: number, message: (seconds: number) => string): AppError {
  const retryAfter = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new AppError('rate_limited', message(retryAfter), { headers: { 'retry-after': String(retryAfter) } });
}

/**
 * Counts failed attempts per key in a fixed window from the key's first failure. The counts live in
 * the store given (shared by every instance of the app, so replicas do not multiply a budget and a
 * deploy does not reset it), or in this process's memory.
 */
export function createThrottle(options: ThrottleOptions, now: () => number = Date.now) {
  const source = options.counters ?? memoryCounters({ now, maxKeys: options.maxKeys });
  const counts = source(options.namespace ?? 'throttle');

  return {
    /** Throws 429 with Retry-After when any key is over its budget. */
    async check(keys: string[]) {
      for (const key of keys) {
        const found = await counts.get(key);
        if (found && found.count >= options.maxFailures) {
          throw retryError(found.msLeft, (s) => `Too many failed attempts, retry in ${s} seconds`);
        }
      }
    },
    async fail(keys: string[]) {
      for (const key of keys) await counts.hit(key, options.windowMs);
    },
    async reset(keys: string[]) {
      for (const key of keys) await counts.delete(key);
    },
    /** Keys held now in memory (for tests of the memory bound). */
    size: () => counts.size?.() ?? 0,
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
  /** Pairs and IPs kept at most each in memory; the oldest are forgotten first. */
  maxEntries?: number;
  /** Where the counts live: shared by every instance (see sharedCounters), or this process's memory by default. */
  counters?: CounterSource;
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
 * against credential stuffing. The counts live in the store given, shared by every instance, or in
 * memory (at most `maxEntries` pairs and IPs each).
 */
export function createLoginThrottle(options: LoginThrottleOptions | (() => number) = {}) {
  const opts = typeof options === 'function' ? { now: options } : options;
  const now = opts.now ?? Date.now;
  const freeFailures = opts.freeFailures ?? 5;
  const baseDelayMs = opts.baseDelayMs ?? 1000;
  const maxDelayMs = opts.maxDelayMs ?? 15 * 60_000;
  const pairMemoryMs = opts.pairMemoryMs ?? 60 * 60_000;
  const maxEntries = opts.maxEntries ?? 50_000;
  const source = opts.counters ?? memoryCounters({ now, maxKeys: maxEntries });
  // A pair's failures (kept `pairMemoryMs` after its last one), its wait, and each IP's failures.
  const pairs = source('login_pair');
  const waits = source('login_wait');
  const perIp = createThrottle({ maxFailures: opts.ipMaxFailures ?? 100, windowMs: opts.ipWindowMs ?? 15 * 60_000, counters: source, namespace: 'login_ip' }, now);

  // A client key holds no space, so the pair key is unambiguous (read from its end); and no NUL,
  // which PostgreSQL cannot store.
  const pairKey = (email: string, ip: string) => `${email.toLowerCase()} ${clientKey(ip)}`;

  return {
    /** 429 with Retry-After while the pair waits out its delay, or the IP is over its ceiling. */
    async check(email: string, ip: string) {
      const wait = await waits.get(pairKey(email, ip));
      if (wait) throw retryError(wait.msLeft, (s) => `Too many failed sign-in attempts, retry in ${s} seconds`);
      try {
        await perIp.check([clientKey(ip)]);
      } catch (error) {
        if (error instanceof AppError && error.code === 'rate_limited') {
          throw new AppError('rate_limited', 'Too many failed sign-in attempts from this address; retry later', { headers: error.headers });
        }
        throw error;
      }
    },
    async fail(email: string, ip: string) {
      const key = pairKey(email, ip);
      const { count: failures } = await pairs.hit(key, pairMemoryMs);
      // The fifth failure waits 1 s, the sixth 2 s …; the exponent is bounded so it never overflows.
      const beyond = failures - freeFailures;
      const delay = beyond >= 0 ? Math.min(maxDelayMs, baseDelayMs * 2 ** Math.min(beyond, 40)) : 0;
      // The pair is remembered from its last failure (and for as long as its wait, if longer).
      await pairs.set(key, failures, Math.max(pairMemoryMs, delay));
      if (delay > 0) await waits.set(key, 1, delay);
      await perIp.fail([clientKey(ip)]);
    },
    /** A right password forgets the pair's failures; the IP's count across accounts stays. */
    async succeed(email: string, ip: string) {
      const key = pairKey(email, ip);
      await pairs.delete(key);
      await waits.delete(key);
    },
    /** Entries held now in memory: pairs and IPs (for tests of the memory bound). */
    size: () => ({ pairs: pairs.size?.() ?? 0, ips: perIp.size() }),
  };
}

export type LoginThrottle = ReturnType<typeof createLoginThrottle>;
