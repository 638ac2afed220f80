import { AppError } from '@repo/http';
import { describe, expect, it } from 'vitest';
import { createLoginThrottle, createThrottle } from '../src/index.js';

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

  it('refuses a sixth attempt after five failures for one e-mail, with Retry-After', () => {
    const c = clock();
    const login = createLoginThrottle(c.now);
    for (let i = 0; i < 5; i++) {
      expect(refusal(() => login.check('ana@example.com', '10.0.0.1'))).toBeUndefined();
      login.fail('ana@example.com', '10.0.0.1');
    }
    const error = refusal(() => login.check('ana@example.com', '10.0.0.1'));
    expect(error).toBeInstanceOf(AppError);
    expect(error!.statusCode).toBe(429);
    expect(error!.code).toBe('rate_limited');
    expect(error!.headers).toEqual({ 'retry-after': '900' });
    // The e-mail is refused from any address; another e-mail from the same address is not.
    expect(refusal(() => login.check('ana@example.com', '10.9.9.9'))).toBeDefined();
    expect(refusal(() => login.check('bo@example.com', '10.0.0.1'))).toBeUndefined();
  });

  it('lets the e-mail try again once the window has expired', () => {
    const c = clock();
    const login = createLoginThrottle(c.now);
    for (let i = 0; i < 5; i++) login.fail('ana@example.com', '10.0.0.1');
    c.advance(FIFTEEN_MINUTES - 1);
    expect(refusal(() => login.check('ana@example.com', '10.0.0.1'))!.headers).toEqual({ 'retry-after': '1' });
    c.advance(1);
    expect(refusal(() => login.check('ana@example.com', '10.0.0.1'))).toBeUndefined();
  });

  it('resets the e-mail count on success', () => {
    const c = clock();
    const login = createLoginThrottle(c.now);
    for (let i = 0; i < 4; i++) login.fail('ana@example.com', '10.0.0.1');
    login.succeed('ana@example.com');
    for (let i = 0; i < 4; i++) login.fail('ana@example.com', '10.0.0.1');
    expect(refusal(() => login.check('ana@example.com', '10.0.0.1'))).toBeUndefined();
    login.fail('ana@example.com', '10.0.0.1');
    expect(refusal(() => login.check('ana@example.com', '10.0.0.1'))).toBeDefined();
    login.succeed('ana@example.com');
    expect(refusal(() => login.check('ana@example.com', '10.0.0.1'))).toBeUndefined();
  });

  it('a success for one e-mail leaves the others throttled', () => {
    const c = clock();
    const login = createLoginThrottle(c.now);
    for (let i = 0; i < 5; i++) {
      login.fail('ana@example.com', '10.0.0.1');
      login.fail('bo@example.com', '10.0.0.2');
    }
    login.succeed('ana@example.com');
    expect(refusal(() => login.check('ana@example.com', '10.0.0.1'))).toBeUndefined();
    expect(refusal(() => login.check('bo@example.com', '10.0.0.2'))).toBeDefined();
  });

  it('throttles an IP spraying many e-mails after 50 failures', () => {
    const c = clock();
    const login = createLoginThrottle(c.now);
    for (let i = 0; i < 50; i++) {
      expect(refusal(() => login.check(`user${i}@example.com`, '10.6.6.6'))).toBeUndefined();
      login.fail(`user${i}@example.com`, '10.6.6.6');
    }
    const error = refusal(() => login.check('fresh@example.com', '10.6.6.6'));
    expect(error?.statusCode).toBe(429);
    expect(refusal(() => login.check('fresh@example.com', '10.0.0.1'))).toBeUndefined();
    // A success for one e-mail does not clear the IP's count.
    login.succeed('user1@example.com');
    expect(refusal(() => login.check('user1@example.com', '10.6.6.6'))).toBeDefined();
  });
});
