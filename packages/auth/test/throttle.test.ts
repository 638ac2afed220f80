import { AppError } from '@repo/http';
import { describe, expect, it } from 'vitest';
import { clientKey, createLoginThrottle, createThrottle } from '../src/index.js';

function clock(start = 1_700_000_000_000) {
  let t = start;
  return {
    now: () => t,
    advance(ms: number) {
      t += ms;
    },
  };
}

/** The AppError a check throws, or undefined when it passes. */
function refusal(check: () => void): AppError | undefined {
  try {
    check();
    return undefined;
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
}

describe('createThrottle', () => {
  it('lets a key through until it reaches its failure budget', () => {
    const c = clock();
    const throttle = createThrottle({ maxFailures: 3, windowMs: 60_000 }, c.now);
    expect(refusal(() => throttle.check(['k']))).toBeUndefined();
    throttle.fail(['k']);
    throttle.fail(['k']);
    expect(refusal(() => throttle.check(['k']))).toBeUndefined();
    throttle.fail(['k']);
    const error = refusal(() => throttle.check(['k']));
    expect(error).toBeInstanceOf(AppError);
    expect(error!.code).toBe('rate_limited');
    expect(error!.statusCode).toBe(429);
    expect(error!.headers).toEqual({ 'retry-after': '60' });
    expect(error!.message).toMatch(/retry in 60 seconds/);
  });

  it('counts down Retry-After, rounding up and never below one second', () => {
    const c = clock();
    const throttle = createThrottle({ maxFailures: 1, windowMs: 10_000 }, c.now);
    throttle.fail(['k']);
    c.advance(2_500);
    expect(refusal(() => throttle.check(['k']))!.headers).toEqual({ 'retry-after': '8' });
    c.advance(7_400);
    expect(refusal(() => throttle.check(['k']))!.headers).toEqual({ 'retry-after': '1' });
    c.advance(99);
    expect(refusal(() => throttle.check(['k']))!.headers).toEqual({ 'retry-after': '1' });
    c.advance(1);
    expect(refusal(() => throttle.check(['k']))).toBeUndefined();
  });

  it('uses a fixed window from the first failure, then starts over', () => {
    const c = clock();
    const throttle = createThrottle({ maxFailures: 2, windowMs: 1_000 }, c.now);
    throttle.fail(['k']);
    c.advance(900);
    throttle.fail(['k']);
    expect(refusal(() => throttle.check(['k']))).toBeDefined();
    c.advance(100);
    // The window of the first failure has ended: the count is gone.
    expect(refusal(() => throttle.check(['k']))).toBeUndefined();
    throttle.fail(['k']);
    expect(refusal(() => throttle.check(['k']))).toBeUndefined();
    throttle.fail(['k']);
    expect(refusal(() => throttle.check(['k']))).toBeDefined();
  });

  it('keeps keys apart and refuses when any checked key is over', () => {
    const c = clock();
    const throttle = createThrottle({ maxFailures: 1, windowMs: 1_000 }, c.now);
    throttle.fail(['a']);
    expect(refusal(() => throttle.check(['b']))).toBeUndefined();
    expect(refusal(() => throttle.check(['b', 'a']))).toBeDefined();
    throttle.fail(['b', 'c']);
    expect(refusal(() => throttle.check(['c']))).toBeDefined();
  });

  it('forgets a key on reset', () => {
    const c = clock();
    const throttle = createThrottle({ maxFailures: 1, windowMs: 1_000 }, c.now);
    throttle.fail(['a', 'b']);
    throttle.reset(['a']);
    expect(refusal(() => throttle.check(['a']))).toBeUndefined();
    expect(refusal(() => throttle.check(['b']))).toBeDefined();
  });

  it('keeps live buckets when it sweeps expired ones', () => {
    const c = clock();
    const throttle = createThrottle({ maxFailures: 2, windowMs: 1_000 }, c.now);
    for (let i = 0; i < 10_000; i++) throttle.fail([`stale-${i}`]);
    c.advance(2_000);
    throttle.fail(['hot']);
    throttle.fail(['hot']);
    // This failure finds more than 10 000 buckets and sweeps the expired ones.
    throttle.fail(['trigger']);
    expect(refusal(() => throttle.check(['hot']))).toBeDefined();
    expect(refusal(() => throttle.check(['stale-1']))).toBeUndefined();
  });

  it('uses the real clock by default', () => {
    const throttle = createThrottle({ maxFailures: 1, windowMs: 60_000 });
    throttle.fail(['k']);
    expect(refusal(() => throttle.check(['k']))!.headers).toEqual({ 'retry-after': '60' });
  });
});

describe('createLoginThrottle', () => {
  const FIFTEEN_MINUTES = 15 * 60_000;
  const ana = 'ana@example.com';

  /** Fails the pair n times, checking before each failure as the login route does. */
  function failTimes(login: ReturnType<typeof createLoginThrottle>, n: number, email = ana, ip = '203.0.113.7') {
    for (let i = 0; i < n; i++) {
      const refused = refusal(() => login.check(email, ip));
      if (refused) throw new Error(`attempt ${i + 1} refused: ${refused.message}`);
      login.fail(email, ip);
    }
  }

  it('answers the first five failures of a pair at once, then makes it wait 1 s, 2 s, 4 s …', () => {
    const c = clock();
    const login = createLoginThrottle({ now: c.now });
    failTimes(login, 5);
    const first = refusal(() => login.check(ana, '203.0.113.7'));
    expect(first).toBeInstanceOf(AppError);
    expect(first!.statusCode).toBe(429);
    expect(first!.code).toBe('rate_limited');
    expect(first!.headers).toEqual({ 'retry-after': '1' });
    c.advance(1000);
    expect(refusal(() => login.check(ana, '203.0.113.7'))).toBeUndefined();
    login.fail(ana, '203.0.113.7');
    expect(refusal(() => login.check(ana, '203.0.113.7'))!.headers).toEqual({ 'retry-after': '2' });
    c.advance(2000);
    login.fail(ana, '203.0.113.7');
    expect(refusal(() => login.check(ana, '203.0.113.7'))!.headers).toEqual({ 'retry-after': '4' });
    c.advance(3999);
    expect(refusal(() => login.check(ana, '203.0.113.7'))!.headers).toEqual({ 'retry-after': '1' });
    c.advance(1);
    expect(refusal(() => login.check(ana, '203.0.113.7'))).toBeUndefined();
  });

  it('caps the wait at 15 minutes however long the attack goes on', () => {
    const c = clock();
    const login = createLoginThrottle({ now: c.now });
    failTimes(login, 5);
    for (let i = 0; i < 60; i++) {
      const wait = Number(refusal(() => login.check(ana, '203.0.113.7'))?.headers?.['retry-after'] ?? 0);
      expect(wait).toBeLessThanOrEqual(15 * 60);
      c.advance(wait * 1000);
      login.fail(ana, '203.0.113.7');
    }
    expect(refusal(() => login.check(ana, '203.0.113.7'))!.headers).toEqual({ 'retry-after': '900' });
  });

  it('never locks the owner out: the right password from an address that has not failed gets in', () => {
    const c = clock();
    const login = createLoginThrottle({ now: c.now });
    failTimes(login, 5);
    for (let i = 0; i < 30; i++) {
      c.advance(FIFTEEN_MINUTES);
      login.fail(ana, '203.0.113.7');
    }
    expect(refusal(() => login.check(ana, '203.0.113.7'))).toBeDefined();
    // The same account from the owner's address, and the attacker's address for another account.
    expect(refusal(() => login.check(ana, '198.51.100.20'))).toBeUndefined();
    expect(refusal(() => login.check('bo@example.com', '203.0.113.7'))).toBeUndefined();
    // E-mail casing does not make a new pair.
    expect(refusal(() => login.check('ANA@example.com', '203.0.113.7'))).toBeDefined();
  });

  it('forgets the pair on success, but not the address count across accounts', () => {
    const c = clock();
    const login = createLoginThrottle({ now: c.now, ipMaxFailures: 8 });
    failTimes(login, 5);
    c.advance(1000);
    login.succeed(ana, '203.0.113.7');
    expect(refusal(() => login.check(ana, '203.0.113.7'))).toBeUndefined();
    failTimes(login, 3, 'bo@example.com');
    // Eight failures from this address: the ceiling holds for every account, the owner's included.
    const error = refusal(() => login.check('carl@example.com', '203.0.113.7'));
    expect(error?.statusCode).toBe(429);
    expect(Number(error!.headers!['retry-after'])).toBeGreaterThan(800);
  });

  it('refuses an address after 100 failures across accounts for 15 minutes (credential stuffing)', () => {
    const c = clock();
    const login = createLoginThrottle({ now: c.now });
    for (let i = 0; i < 100; i++) failTimes(login, 1, `user${i}@example.com`, '203.0.113.66');
    const error = refusal(() => login.check('fresh@example.com', '203.0.113.66'));
    expect(error?.statusCode).toBe(429);
    expect(error!.headers).toEqual({ 'retry-after': '900' });
    expect(refusal(() => login.check('fresh@example.com', '203.0.113.67'))).toBeUndefined();
    c.advance(FIFTEEN_MINUTES);
    expect(refusal(() => login.check('fresh@example.com', '203.0.113.66'))).toBeUndefined();
  });

  it('counts an IPv6 client by its /64, and an IPv4-mapped address as the IPv4', () => {
    const c = clock();
    const login = createLoginThrottle({ now: c.now, ipMaxFailures: 3 });
    failTimes(login, 1, 'a@example.com', '2001:db8:1:2::1');
    failTimes(login, 1, 'b@example.com', '2001:db8:1:2:ffff::9');
    failTimes(login, 1, 'c@example.com', '2001:db8:1:2:abcd::42');
    expect(refusal(() => login.check('d@example.com', '2001:db8:1:2::77'))).toBeDefined();
    expect(refusal(() => login.check('d@example.com', '2001:db8:1:3::1'))).toBeUndefined();
    const mapped = createLoginThrottle({ now: c.now });
    failTimes(mapped, 5, ana, '::ffff:192.0.2.1');
    expect(refusal(() => mapped.check(ana, '192.0.2.1'))).toBeDefined();
    expect(clientKey('::ffff:192.0.2.1')).toBe('192.0.2.1');
  });

  it('starts a pair over after an hour without failures', () => {
    const c = clock();
    const login = createLoginThrottle({ now: c.now });
    failTimes(login, 5);
    c.advance(60 * 60_000);
    failTimes(login, 5);
    expect(refusal(() => login.check(ana, '203.0.113.7'))!.headers).toEqual({ 'retry-after': '1' });
  });

  it('keeps memory bounded: past the cap the oldest pairs and addresses are forgotten', () => {
    const c = clock();
    const login = createLoginThrottle({ now: c.now, maxEntries: 100, ipMaxFailures: 1_000_000 });
    failTimes(login, 5, 'first@example.com', '192.0.2.1');
    for (let i = 0; i < 500; i++) login.fail(`user${i}@example.com`, `198.51.100.${i % 250}`);
    expect(login.size().pairs).toBeLessThanOrEqual(100);
    expect(login.size().ips).toBeLessThanOrEqual(100);
    // The newest pair is still known.
    failTimes(login, 4, 'last@example.com', '192.0.2.2');
    login.fail('last@example.com', '192.0.2.2');
    expect(refusal(() => login.check('last@example.com', '192.0.2.2'))).toBeDefined();
  });

  it('takes a bare clock function as before', () => {
    const c = clock();
    const login = createLoginThrottle(c.now);
    failTimes(login, 5);
    expect(refusal(() => login.check(ana, '203.0.113.7'))!.headers).toEqual({ 'retry-after': '1' });
  });
});
