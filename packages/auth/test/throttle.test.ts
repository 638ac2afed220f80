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
async function refusal(check: () => Promise<void>): Promise<AppError | undefined> {
  try {
    await check();
    return undefined;
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
}

describe('createThrottle', async () => {
  it('lets a key through until it reaches its failure budget', async () => {
    const c = clock();
    const throttle = createThrottle({ maxFailures: 3, windowMs: 60_000 }, c.now);
    expect(await refusal(() => throttle.check(['k']))).toBeUndefined();
    await throttle.fail(['k']);
    await throttle.fail(['k']);
    expect(await refusal(() => throttle.check(['k']))).toBeUndefined();
    await throttle.fail(['k']);
    const error = await refusal(() => throttle.check(['k']));
    expect(error).toBeInstanceOf(AppError);
    expect(error!.code).toBe('rate_limited');
    expect(error!.statusCode).toBe(429);
    expect(error!.headers).toEqual({ 'retry-after': '60' });
    expect(error!.message).toMatch(/retry in 60 seconds/);
  });

  it('counts down Retry-After, rounding up and never below one second', async () => {
    const c = clock();
    const throttle = createThrottle({ maxFailures: 1, windowMs: 10_000 }, c.now);
    await throttle.fail(['k']);
    c.advance(2_500);
    expect((await refusal(() => throttle.check(['k'])))!.headers).toEqual({ 'retry-after': '8' });
    c.advance(7_400);
    expect((await refusal(() => throttle.check(['k'])))!.headers).toEqual({ 'retry-after': '1' });
    c.advance(99);
    expect((await refusal(() => throttle.check(['k'])))!.headers).toEqual({ 'retry-after': '1' });
    c.advance(1);
    expect(await refusal(() => throttle.check(['k']))).toBeUndefined();
  });

  it('uses a fixed window from the first failure, then starts over', async () => {
    const c = clock();
    const throttle = createThrottle({ maxFailures: 2, windowMs: 1_000 }, c.now);
    await throttle.fail(['k']);
    c.advance(900);
    await throttle.fail(['k']);
    expect(await refusal(() => throttle.check(['k']))).toBeDefined();
    c.advance(100);
    // The window of the first failure has ended: the count is gone.
    expect(await refusal(() => throttle.check(['k']))).toBeUndefined();
    await throttle.fail(['k']);
    expect(await refusal(() => throttle.check(['k']))).toBeUndefined();
    await throttle.fail(['k']);
    expect(await refusal(() => throttle.check(['k']))).toBeDefined();
  });

  it('keeps keys apart and refuses when any checked key is over', async () => {
    const c = clock();
    const throttle = createThrottle({ maxFailures: 1, windowMs: 1_000 }, c.now);
    await throttle.fail(['a']);
    expect(await refusal(() => throttle.check(['b']))).toBeUndefined();
    expect(await refusal(() => throttle.check(['b', 'a']))).toBeDefined();
    await throttle.fail(['b', 'c']);
    expect(await refusal(() => throttle.check(['c']))).toBeDefined();
  });

  it('forgets a key on reset', async () => {
    const c = clock();
    const throttle = createThrottle({ maxFailures: 1, windowMs: 1_000 }, c.now);
    await throttle.fail(['a', 'b']);
    await throttle.reset(['a']);
    expect(await refusal(() => throttle.check(['a']))).toBeUndefined();
    expect(await refusal(() => throttle.check(['b']))).toBeDefined();
  });

  it('keeps live buckets when it sweeps expired ones', async () => {
    const c = clock();
    const throttle = createThrottle({ maxFailures: 2, windowMs: 1_000 }, c.now);
    for (let i = 0; i < 10_000; i++) await throttle.fail([`stale-${i}`]);
    c.advance(2_000);
    await throttle.fail(['hot']);
    await throttle.fail(['hot']);
    // This failure finds more than 10 000 buckets and sweeps the expired ones.
    await throttle.fail(['trigger']);
    expect(await refusal(() => throttle.check(['hot']))).toBeDefined();
    expect(await refusal(() => throttle.check(['stale-1']))).toBeUndefined();
  });

  it('uses the real clock by default', async () => {
    const throttle = createThrottle({ maxFailures: 1, windowMs: 60_000 });
    await throttle.fail(['k']);
    expect((await refusal(() => throttle.check(['k'])))!.headers).toEqual({ 'retry-after': '60' });
  });
});

describe('createLoginThrottle', async () => {
  const FIFTEEN_MINUTES = 15 * 60_000;
  const ana = 'ana@example.com';

  /** Fails the pair n times, checking before each failure as the login route does. */
  async function failTimes(login: ReturnType<typeof createLoginThrottle>, n: number, email = ana, ip = '203.0.113.7') {
    for (let i = 0; i < n; i++) {
      const refused = await refusal(() => login.check(email, ip));
      if (refused) throw new Error(`attempt ${i + 1} refused: ${refused.message}`);
      await login.fail(email, ip);
    }
  }

  it('answers the first five failures of a pair at once, then makes it wait 1 s, 2 s, 4 s …', async () => {
    const c = clock();
    const login = createLoginThrottle({ now: c.now });
    await failTimes(login, 5);
    const first = await refusal(() => login.check(ana, '203.0.113.7'));
    expect(first).toBeInstanceOf(AppError);
    expect(first!.statusCode).toBe(429);
    expect(first!.code).toBe('rate_limited');
    expect(first!.headers).toEqual({ 'retry-after': '1' });
    c.advance(1000);
    expect(await refusal(() => login.check(ana, '203.0.113.7'))).toBeUndefined();
    await login.fail(ana, '203.0.113.7');
    expect((await refusal(() => login.check(ana, '203.0.113.7')))!.headers).toEqual({ 'retry-after': '2' });
    c.advance(2000);
    await login.fail(ana, '203.0.113.7');
    expect((await refusal(() => login.check(ana, '203.0.113.7')))!.headers).toEqual({ 'retry-after': '4' });
    c.advance(3999);
    expect((await refusal(() => login.check(ana, '203.0.113.7')))!.headers).toEqual({ 'retry-after': '1' });
    c.advance(1);
    expect(await refusal(() => login.check(ana, '203.0.113.7'))).toBeUndefined();
  });

  it('caps the wait at 15 minutes however long the attack goes on', async () => {
    const c = clock();
    const login = createLoginThrottle({ now: c.now });
    await failTimes(login, 5);
    for (let i = 0; i < 60; i++) {
      const wait = Number((await refusal(() => login.check(ana, '203.0.113.7')))?.headers?.['retry-after'] ?? 0);
      expect(wait).toBeLessThanOrEqual(15 * 60);
      c.advance(wait * 1000);
      await login.fail(ana, '203.0.113.7');
    }
    expect((await refusal(() => login.check(ana, '203.0.113.7')))!.headers).toEqual({ 'retry-after': '900' });
  });

  it('never locks the owner out: the right password from an address that has not failed gets in', async () => {
    const c = clock();
    const login = createLoginThrottle({ now: c.now });
    await failTimes(login, 5);
    for (let i = 0; i < 30; i++) {
      c.advance(FIFTEEN_MINUTES);
      await login.fail(ana, '203.0.113.7');
    }
    expect(await refusal(() => login.check(ana, '203.0.113.7'))).toBeDefined();
    // The same account from the owner's address, and the attacker's address for another account.
    expect(await refusal(() => login.check(ana, '198.51.100.20'))).toBeUndefined();
    expect(await refusal(() => login.check('bo@example.com', '203.0.113.7'))).toBeUndefined();
    // E-mail casing does not make a new pair.
    expect(await refusal(() => login.check('ANA@example.com', '203.0.113.7'))).toBeDefined();
  });

  it('forgets the pair on success, but not the address count across accounts', async () => {
    const c = clock();
    const login = createLoginThrottle({ now: c.now, ipMaxFailures: 8 });
    await failTimes(login, 5);
    c.advance(1000);
    await login.succeed(ana, '203.0.113.7');
    expect(await refusal(() => login.check(ana, '203.0.113.7'))).toBeUndefined();
    await failTimes(login, 3, 'bo@example.com');
    // Eight failures from this address: the ceiling holds for every account, the owner's included.
    const error = await refusal(() => login.check('carl@example.com', '203.0.113.7'));
    expect(error?.statusCode).toBe(429);
    expect(Number(error!.headers!['retry-after'])).toBeGreaterThan(800);
  });

  it('refuses an address after 100 failures across accounts for 15 minutes (credential stuffing)', async () => {
    const c = clock();
    const login = createLoginThrottle({ now: c.now });
    for (let i = 0; i < 100; i++) await failTimes(login, 1, `user${i}@example.com`, '203.0.113.66');
    const error = await refusal(() => login.check('fresh@example.com', '203.0.113.66'));
    expect(error?.statusCode).toBe(429);
    expect(error!.headers).toEqual({ 'retry-after': '900' });
    expect(await refusal(() => login.check('fresh@example.com', '203.0.113.67'))).toBeUndefined();
    c.advance(FIFTEEN_MINUTES);
    expect(await refusal(() => login.check('fresh@example.com', '203.0.113.66'))).toBeUndefined();
  });

  it('counts an IPv6 client by its /64, and an IPv4-mapped address as the IPv4', async () => {
    const c = clock();
    const login = createLoginThrottle({ now: c.now, ipMaxFailures: 3 });
    await failTimes(login, 1, 'a@example.com', '2001:db8:1:2::1');
    await failTimes(login, 1, 'b@example.com', '2001:db8:1:2:ffff::9');
    await failTimes(login, 1, 'c@example.com', '2001:db8:1:2:abcd::42');
    expect(await refusal(() => login.check('d@example.com', '2001:db8:1:2::77'))).toBeDefined();
    expect(await refusal(() => login.check('d@example.com', '2001:db8:1:3::1'))).toBeUndefined();
    const mapped = createLoginThrottle({ now: c.now });
    await failTimes(mapped, 5, ana, '::ffff:192.0.2.1');
    expect(await refusal(() => mapped.check(ana, '192.0.2.1'))).toBeDefined();
    expect(clientKey('::ffff:192.0.2.1')).toBe('192.0.2.1');
  });

  it('starts a pair over after an hour without failures', async () => {
    const c = clock();
    const login = createLoginThrottle({ now: c.now });
    await failTimes(login, 5);
    c.advance(60 * 60_000);
    await failTimes(login, 5);
    expect((await refusal(() => login.check(ana, '203.0.113.7')))!.headers).toEqual({ 'retry-after': '1' });
  });

  it('keeps memory bounded: past the cap the oldest pairs and addresses are forgotten', async () => {
    const c = clock();
    const login = createLoginThrottle({ now: c.now, maxEntries: 100, ipMaxFailures: 1_000_000 });
    await failTimes(login, 5, 'first@example.com', '192.0.2.1');
    for (let i = 0; i < 500; i++) await login.fail(`user${i}@example.com`, `198.51.100.${i % 250}`);
    expect(login.size().pairs).toBeLessThanOrEqual(100);
    expect(login.size().ips).toBeLessThanOrEqual(100);
    // The newest pair is still known.
    await failTimes(login, 4, 'last@example.com', '192.0.2.2');
    await login.fail('last@example.com', '192.0.2.2');
    expect(await refusal(() => login.check('last@example.com', '192.0.2.2'))).toBeDefined();
  });

  it('takes a bare clock function as before', async () => {
    const c = clock();
    const login = createLoginThrottle(c.now);
    await failTimes(login, 5);
    expect((await refusal(() => login.check(ana, '203.0.113.7')))!.headers).toEqual({ 'retry-after': '1' });
  });
});
