import { describe, expect, it } from 'vitest';
import { verifiedTokens } from '../src/verified-tokens.js';

const NOW = 1_800_000_000_000;

describe('verifiedTokens', () => {
  it('answers a kept token until its ttl, then forgets it', () => {
    const cache = verifiedTokens<string>({ max: 10, ttlMs: 1_000 });
    cache.set('a.b.c', 'alice', undefined, NOW);
    expect(cache.get('a.b.c', NOW + 999)).toBe('alice');
    expect(cache.get('a.b.c', NOW + 1_000)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('keeps a token no later than its exp claim, and not at all once it is past', () => {
    const cache = verifiedTokens<string>({ max: 10, ttlMs: 60_000 });
    cache.set('expiring', 'bob', (NOW + 5_000) / 1000, NOW);
    expect(cache.get('expiring', NOW + 4_999)).toBe('bob');
    expect(cache.get('expiring', NOW + 5_000)).toBeUndefined();
    cache.set('expired', 'carol', (NOW - 1) / 1000, NOW);
    expect(cache.size).toBe(0);
  });

  it('keeps null (a well-signed token the plugin refuses) apart from unknown', () => {
    const cache = verifiedTokens<string | null>({ max: 10, ttlMs: 1_000 });
    cache.set('refused', null, undefined, NOW);
    expect(cache.get('refused', NOW)).toBeNull();
    expect(cache.get('never-seen', NOW)).toBeUndefined();
  });

  it('drops the oldest entry to make room, and a token is told apart from its prefixes', () => {
    const cache = verifiedTokens<number>({ max: 3, ttlMs: 1_000 });
    for (const [i, token] of ['t', 'to', 'tok', 'toke'].entries()) cache.set(token, i, undefined, NOW);
    expect(cache.size).toBe(3);
    expect(cache.get('t', NOW)).toBeUndefined();
    expect([cache.get('to', NOW), cache.get('tok', NOW), cache.get('toke', NOW)]).toEqual([1, 2, 3]);
    // Set again, a token counts as the newest.
    cache.set('to', 1, undefined, NOW);
    cache.set('token', 4, undefined, NOW);
    expect(cache.get('tok', NOW)).toBeUndefined();
    expect(cache.get('to', NOW)).toBe(1);
  });
});
