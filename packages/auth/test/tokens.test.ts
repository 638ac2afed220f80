import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateLinkToken, generateOtp, generateSessionId, hashToken, safeEqual } from '../src/index.js';

describe('hashToken', () => {
  it('is the hex SHA-256 of the token', () => {
    // The NIST test vector for "abc".
    expect(hashToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashToken('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('is deterministic and tells tokens apart', () => {
    const token = generateLinkToken();
    expect(hashToken(token)).toBe(hashToken(token));
    expect(hashToken(token)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashToken(token)).toBe(createHash('sha256').update(token, 'utf8').digest('hex'));
    expect(hashToken(`${token}x`)).not.toBe(hashToken(token));
  });
});

describe('generateOtp', () => {
  it('is always exactly six digits, zero-padded', () => {
    const codes = Array.from({ length: 2000 }, () => generateOtp());
    for (const code of codes) expect(code).toMatch(/^\d{6}$/);
    // With 2000 draws a code below 100000 (a leading zero) is all but certain: padding is exercised.
    expect(codes.some((code) => code.startsWith('0'))).toBe(true);
  });

  it('is random', () => {
    const codes = new Set(Array.from({ length: 200 }, () => generateOtp()));
    expect(codes.size).toBeGreaterThan(190);
  });
});

describe('generateLinkToken', () => {
  it('is 256 random bits in URL-safe base64 (43 characters)', () => {
    const token = generateLinkToken();
    expect(token).toHaveLength(43);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(token, 'base64url')).toHaveLength(32);
  });

  it('never repeats', () => {
    const tokens = new Set(Array.from({ length: 500 }, () => generateLinkToken()));
    expect(tokens.size).toBe(500);
  });
});

describe('generateSessionId', () => {
  it('is 144 random bits in URL-safe base64', () => {
    const id = generateSessionId();
    expect(id).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(generateSessionId()).not.toBe(id);
  });
});

describe('safeEqual', () => {
  it('is true for equal strings', () => {
    expect(safeEqual('', '')).toBe(true);
    expect(safeEqual('123456', '123456')).toBe(true);
    const hashed = hashToken('x');
    expect(safeEqual(hashed, hashToken('x'))).toBe(true);
  });

  it('is false for different strings of the same length', () => {
    expect(safeEqual('123456', '123457')).toBe(false);
    expect(safeEqual('abc', 'ABC')).toBe(false);
  });

  it('is false, without throwing, for different lengths', () => {
    expect(safeEqual('123456', '1234567')).toBe(false);
    expect(safeEqual('', 'a')).toBe(false);
  });

  it('compares bytes, not UTF-16 units', () => {
    // Same string length, different byte lengths: must answer false rather than throw.
    expect(safeEqual('é', 'e')).toBe(false);
    expect(safeEqual('ü', 'ü')).toBe(true);
  });
});
