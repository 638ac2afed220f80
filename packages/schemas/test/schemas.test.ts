import { describe, expect, it } from 'vitest';
import { email, envelope, errorResponses, hasUnstorableText, idParams, iso, isoDateTime, logoutSchema, paginationQuery, storableText, timestamp, unstorableTextPaths } from '../src/index.js';
import { z } from 'zod';

describe('shared schemas', () => {
  it('coerces path ids and refuses non-positive or non-integer ones', () => {
    expect(idParams.parse({ id: '42' })).toEqual({ id: 42 });
    expect(idParams.safeParse({ id: '0' }).success).toBe(false);
    expect(idParams.safeParse({ id: '1.5' }).success).toBe(false);
    expect(idParams.safeParse({ id: 'abc' }).success).toBe(false);
    for (const odd of ['1e3', '0x10', ' 5', '05', '+5', '2147483648']) {
      expect(idParams.safeParse({ id: odd }).success, odd).toBe(false);
    }
    expect(idParams.parse({ id: '2147483647' })).toEqual({ id: 2147483647 });
  });

  it('bounds pagination and applies defaults', () => {
    const q = paginationQuery({ defaultPerPage: 50, maxPerPage: 500 });
    expect(q.parse({})).toEqual({ page: 1, per_page: 50 });
    expect(q.parse({ page: '3', per_page: '500' })).toEqual({ page: 3, per_page: 500 });
    expect(q.safeParse({ per_page: '501' }).success).toBe(false);
    expect(q.safeParse({ page: '0' }).success).toBe(false);
  });

  it('parses ISO instants with an offset and prints them in UTC', () => {
    const d = isoDateTime.parse('2026-03-01T10:00:00+02:00');
    expect(d.toISOString()).toBe('2026-03-01T08:00:00.000Z');
    expect(isoDateTime.safeParse('yesterday').success).toBe(false);
    expect(timestamp.parse(iso(d))).toBe('2026-03-01T08:00:00.000Z');
    expect(iso(null)).toBeNull();
  });

  it('writes an instant exactly as toISOString does, across years, days and milliseconds', () => {
    const step = 7_919_137_777; // about 92 days and an odd millisecond count: every field moves
    for (let t = Date.UTC(1970, 0, 1); t < Date.UTC(2400, 0, 1); t += step) {
      const d = new Date(t);
      expect(iso(d)).toBe(d.toISOString());
    }
    for (const text of ['2026-12-31T23:59:59.999Z', '2028-02-29T00:00:00.000Z', '2026-01-02T03:04:05.007Z', '2026-01-02T03:04:05.070Z']) {
      expect(iso(new Date(text))).toBe(text);
    }
    // Years ISO writes with four padded digits, or with a sign and six.
    for (const year of [0, 7, 99, 999, 9999, -1, 10_000, 275_760]) {
      const d = new Date(Date.UTC(2000, 5, 15, 12, 30, 45, 123));
      d.setUTCFullYear(year);
      expect(iso(d)).toBe(d.toISOString());
    }
    expect(() => iso(new Date(Number.NaN))).toThrow(RangeError);
  });

  it('normalises e-mail addresses', () => {
    expect(email.parse('  Ada@Example.COM ')).toBe('ada@example.com');
    expect(email.safeParse('not-an-email').success).toBe(false);
  });

  it('builds envelopes and error responses', () => {
    expect(envelope(z.object({ a: z.number() })).parse({ data: { a: 1 } })).toEqual({ data: { a: 1 } });
    expect(Object.keys(errorResponses(401, 404, 422))).toEqual(['401', '404', '422']);
  });
});

describe('text PostgreSQL can store', () => {
  it('refuses NUL characters and lone surrogates, keeps paired ones', () => {
    expect(storableText('plain')).toBe(true);
    expect(storableText('emoji \ud83d\ude00 paired')).toBe(true);
    expect(storableText('a\u0000b')).toBe(false);
    expect(storableText('x\ud800y')).toBe(false);
    expect(storableText('x\udc00')).toBe(false);
    expect(storableText('\ude00\ud83d')).toBe(false);
  });

  it('names the path of every bad string and key, up to a limit', () => {
    const value = { logs: [{ message: 'ok' }, { message: 'x\ud800', context: { ['k\u0000']: 1, deep: ['\u0000'] } }] };
    expect(unstorableTextPaths(value).sort()).toEqual(['logs.1.context.deep.0', 'logs.1.context.k\uFFFD', 'logs.1.message']);
    expect(unstorableTextPaths(Array.from({ length: 500 }, () => '\u0000'), 10)).toHaveLength(10);
    expect(unstorableTextPaths({ fine: ['a', { b: 'c' }] })).toEqual([]);
  });

  it('walks deep nesting without recursion', () => {
    let deep: unknown = 'x\ud800';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(unstorableTextPaths(deep)).toHaveLength(1);
    expect(hasUnstorableText(deep)).toBe(true);
    let fine: unknown = { a: 'ok' };
    for (let i = 0; i < 100_000; i++) fine = { fine };
    expect(hasUnstorableText(fine)).toBe(false);
  });

  it('says whether a value holds unstorable text as the paths do, for every kind of value', () => {
    class Parsed {
      text = '\u0000';
    }
    const values: unknown[] = [
      undefined,
      null,
      0,
      true,
      '',
      'plain',
      'a\u0000b',
      '\ud800',
      {},
      [],
      Object.create(null),
      { page: 1, per_page: 20 },
      { ['k\u0000']: 1 },
      { a: [1, 'x', { b: null }] },
      { a: [1, 'x', { b: '\udc00' }] },
      [[['\u0000']]],
      Object.assign(Object.create(null), { q: 'ok', r: ['\ud83d\ude00'] }),
      Object.assign(Object.create(null), { q: 'x\u0000' }),
      // A parser's own object is its route's to check, as unstorableTextPaths leaves it.
      new Parsed(),
      { inner: new Parsed() },
      Object.create({ inherited: '\u0000' }),
    ];
    for (const value of values) {
      expect(hasUnstorableText(value), JSON.stringify(value)).toBe(unstorableTextPaths(value).length > 0);
    }
    expect(hasUnstorableText({ a: [1, 'x', { b: '\udc00' }] })).toBe(true);
    expect(hasUnstorableText({ page: 1, per_page: 20 })).toBe(false);
  });
});

describe('logoutSchema', () => {
  it('documents the logout both services share: bearer only, a message or 401/429 envelopes', () => {
    expect(logoutSchema).toMatchObject({ operationId: 'logout', tags: ['auth'], security: [{ bearerAuth: [] }] });
    expect(Object.keys(logoutSchema.response).sort()).toEqual(['200', '401', '429']);
    expect(logoutSchema.response[200].parse({ message: 'Signed out' })).toEqual({ message: 'Signed out' });
    expect(logoutSchema.response[401].safeParse({ error: 'unauthenticated', message: 'Sign in' }).success).toBe(true);
  });
});
