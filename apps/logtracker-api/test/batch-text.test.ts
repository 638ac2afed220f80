import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '@repo/db';
import { Readable } from 'node:stream';
import { SLICE_BYTES, createBodyPool, readBody, scanBatch, validatePlain } from '../src/modules/logs/batch-text.js';
import { buildTestApp, createProject, createUser, expectError, type TestApp, type TestUser } from './helpers.js';

let t: TestApp;
let owner: TestUser;

beforeAll(async () => {
  t = await buildTestApp();
  owner = await createUser(t);
});

afterAll(async () => {
  await t?.close();
});

const cut = (text: string) => scanBatch(Buffer.from(text));

/** The entries of every slice, parsed back. */
function sliced(text: string) {
  const batch = cut(text);
  if (!batch) return undefined;
  return [...batch.slices()].flatMap((s) => JSON.parse(s.text) as unknown[]);
}

describe('scanBatch', () => {
  it('cuts {"logs": [...]} into its entries, whatever the spacing and the strings hold', () => {
    const entries = [
      { level: 'info', message: 'braces } ] { [ and "quotes" and \\ backslashes' },
      { level: 'error', message: 'é 日本語 🚀', context: { nested: { list: [1, '}', null, { a: [] }] }, 'k"ey': '\\"' } },
      { level: 'debug', message: 'n', timestamp: '2026-01-02T03:04:05Z', source: null },
    ];
    expect(sliced(JSON.stringify({ logs: entries }))).toEqual(entries);
    expect(sliced(JSON.stringify({ logs: entries }, null, 2))).toEqual(entries);
    expect(sliced(` \n{ "logs" :\t[ ${entries.map((e) => JSON.stringify(e)).join(' ,\n ')} ] }\r\n`)).toEqual(entries);
    expect(cut(JSON.stringify({ logs: entries }))?.count).toBe(3);
  });

  it('keeps scalars and arrays as entries, for validation to refuse', () => {
    expect(sliced('{"logs":[1,"two",null,true,[3]]}')).toEqual([1, 'two', null, true, [3]]);
  });

  it('leaves every other shape to the ordinary parser', () => {
    for (const text of [
      '',
      '[]',
      '{}',
      '{"logs":[]}',
      '{"logs":{}}',
      '{"logs":[{"level":"info","message":"a"}],"extra":1}',
      '{"extra":1,"logs":[{"level":"info","message":"a"}]}',
      '{"logs":[{"level":"info","message":"a"}],"logs":[]}',
      '{"\\u006cogs":[{"level":"info","message":"a"}]}',
      '{"logs":[{"level":"info","message":"a"}]} trailing',
      '{"logs":[{"level":"info","message":"a"}]',
      '{"logs":[{"level":"info","message":"a}]}',
      '{"logs":[{"level":"info","message":"a"},]}',
      '{"logs":[{"level":"info","message":"a"} {"level":"info","message":"b"}]}',
    ]) {
      expect(cut(text), text).toBeUndefined();
    }
  });

  it('slices a big batch into JSON arrays of about SLICE_BYTES, in order', () => {
    const entries = Array.from({ length: 3_000 }, (_, i) => ({ level: 'info', message: `${i} ${'x'.repeat(900)}` }));
    const batch = cut(JSON.stringify({ logs: entries }));
    const slices = [...(batch?.slices() ?? [])];
    expect(slices.length).toBeGreaterThan(4);
    for (const slice of slices) expect(Buffer.byteLength(slice.text)).toBeLessThanOrEqual(SLICE_BYTES + 2);
    expect(slices.flatMap((s) => JSON.parse(s.text) as unknown[])).toEqual(entries);
    expect(slices.map((s) => s.first)).toEqual(slices.map((_, i) => slices.slice(0, i).reduce((n, s) => n + (JSON.parse(s.text) as []).length, 0)));
  });

  it('gives an entry bigger than a slice a slice of its own', () => {
    const big = { level: 'info', message: 'y'.repeat(SLICE_BYTES + 10) };
    const batch = cut(JSON.stringify({ logs: [{ level: 'info', message: 'a' }, big, { level: 'info', message: 'b' }] }));
    expect([...(batch?.slices() ?? [])].map((s) => (JSON.parse(s.text) as unknown[]).length)).toEqual([1, 1, 1]);
  });

  it('answers the one slice of a batch that fits in one, and nothing for a bigger one', () => {
    const small = cut('{"logs": [ {"level":"info","message":"a"} , {"level":"error","message":"b \\"c\\""} ]}');
    expect(small?.oneSlice()).toBe([...(small?.slices() ?? [])][0]?.text);
    expect(JSON.parse(small?.oneSlice() ?? 'null')).toEqual([{ level: 'info', message: 'a' }, { level: 'error', message: 'b "c"' }]);
    const entries = Array.from({ length: 600 }, (_, i) => ({ level: 'info', message: `${i} ${'x'.repeat(900)}` }));
    expect(cut(JSON.stringify({ logs: entries }))?.oneSlice()).toBeUndefined();
    expect(cut(JSON.stringify({ logs: [{ level: 'info', message: 'y'.repeat(SLICE_BYTES + 10) }] }))?.oneSlice()).toBeUndefined();
  });
});

describe('readBody', () => {
  const stream = (...chunks: string[]) => Readable.from(chunks.map((c) => Buffer.from(c)));

  it('fills a buffer of the declared length, chunk by chunk', async () => {
    const body = await readBody(stream('{"logs":', '[1,', '2]}'), 14, 100);
    expect(body.toString()).toBe('{"logs":[1,2]}');
  });

  it('joins the chunks of a body without a declared length', async () => {
    expect((await readBody(stream('ab', 'cd', 'é'), Number.NaN, 100)).toString()).toBe('abcdé');
  });

  it('answers 413 for a declared or a received length over the limit', async () => {
    await expect(readBody(stream('x'.repeat(10)), 200, 100)).rejects.toMatchObject({ code: 'payload_too_large' });
    await expect(readBody(stream('x'.repeat(60), 'y'.repeat(60)), Number.NaN, 100)).rejects.toMatchObject({ code: 'payload_too_large' });
  });

  it('answers 400 when the body is longer or shorter than declared', async () => {
    await expect(readBody(stream('abc', 'def'), 4, 100)).rejects.toMatchObject({ code: 'bad_request' });
    await expect(readBody(stream('abc'), 4, 100)).rejects.toMatchObject({ code: 'bad_request' });
  });
});

describe('createBodyPool', () => {
  const MiB = 1024 * 1024;

  it('lends one buffer to big bodies, again once given back', () => {
    const pool = createBodyPool(4 * MiB);
    const first = pool.take(2 * MiB);
    expect(first.length).toBe(2 * MiB);
    pool.give(first);
    const second = pool.take(3 * MiB);
    expect(second.buffer).toBe(first.buffer);
    expect(second.length).toBe(3 * MiB);
  });

  it('gives fresh memory to a big body while the buffer is lent, and keeps one buffer only', () => {
    const pool = createBodyPool(4 * MiB);
    const a = pool.take(2 * MiB);
    const b = pool.take(2 * MiB);
    expect(b.buffer).not.toBe(a.buffer);
    pool.give(a);
    pool.give(b);
    expect(pool.take(2 * MiB).buffer).toBe(a.buffer);
    expect(pool.take(2 * MiB).buffer).not.toBe(b.buffer);
  });

  it('never lends for small bodies, and ignores buffers it did not lend or already took back', () => {
    const pool = createBodyPool(4 * MiB);
    const small = pool.take(1_000);
    pool.give(small);
    pool.give(Buffer.alloc(4 * MiB));
    const big = pool.take(2 * MiB);
    expect(big.buffer).not.toBe(small.buffer);
    pool.give(big);
    pool.give(big);
    const again = pool.take(2 * MiB);
    expect(again.buffer).toBe(big.buffer);
    expect(pool.take(2 * MiB).buffer).not.toBe(big.buffer);
  });
});

describe('validatePlain', () => {
  it('passes plain entries and records their levels', () => {
    const batch = cut(JSON.stringify({ logs: [{ level: 'info', message: 'a' }, { level: 'error', message: 'b', source: 'api' }] }));
    expect(batch && validatePlain(batch)).toBe(true);
    expect([...(batch?.levels ?? [])].sort()).toEqual(['error', 'info']);
    expect(batch?.entries()).toEqual([
      { level: 'info', message: 'a', context: undefined, timestamp: undefined, source: undefined },
      { level: 'error', message: 'b', context: undefined, timestamp: undefined, source: 'api' },
    ]);
  });

  it('refuses a slice that is not valid JSON or not plain, and records nothing', () => {
    for (const text of [
      '{"logs":[{"level":"info","message":"a"},{"level":"info","message":tru}]}',
      '{"logs":[{"level":"info","message":"a"},{"level":"loud","message":"b"}]}',
      '{"logs":[{"level":"info","message":"a","source":"  spaced  "}]}',
    ]) {
      const batch = cut(text);
      expect(batch, text).toBeDefined();
      expect(batch && validatePlain(batch), text).toBe(false);
      expect(batch?.levels).toBeUndefined();
    }
  });
});

describe('POST …/logs/batch with a batch of many slices', () => {
  const countOf = async (projectId: number) =>
    Number((await queryRows<{ n: number }>(t.database.db, sql`select count(*)::int as n from logs where project_id = ${projectId}`))[0]?.n);
  const post = (projectId: number, payload: string) =>
    t.app.inject({
      method: 'POST',
      url: `/api/projects/${projectId}/logs/batch`,
      headers: { ...owner.headers, 'content-type': 'application/json' },
      payload,
    });
  const entries = (n: number) =>
    Array.from({ length: n }, (_, i) => ({ level: i % 7 === 0 ? 'error' : 'info', message: `entry ${i} ${'z'.repeat(1_000)}`, context: { i } }));

  it('stores every entry of every slice, in one transaction', async () => {
    const { id } = await createProject(t, owner);
    const body = JSON.stringify({ logs: entries(2_000) });
    expect(Buffer.byteLength(body)).toBeGreaterThan(3 * SLICE_BYTES);
    const response = await post(id, body);
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json().data).toEqual({ accepted: 2_000 });
    expect(await countOf(id)).toBe(2_000);
    const [sample] = await queryRows<{ message: string; context: unknown }>(
      t.database.db,
      sql`select message, context from logs where project_id = ${id} and message like 'entry 1999 %'`,
    );
    expect(sample?.context).toEqual({ i: 1_999 });
  });

  it('answers 422 naming the bad entry of a late slice, and stores nothing', async () => {
    const { id } = await createProject(t, owner);
    const logs: unknown[] = entries(2_000);
    logs[1_800] = { level: 'loud', message: 'bad' };
    const body = expectError(await post(id, JSON.stringify({ logs })), 422, 'validation_error');
    expect(Object.keys(body.errors ?? {})).toEqual(['logs.1800.level']);
    expect(await countOf(id)).toBe(0);
  });

  it('answers 400 for a late slice that is not JSON, and stores nothing', async () => {
    const { id } = await createProject(t, owner);
    const text = JSON.stringify({ logs: entries(2_000) }).replace('"entry 1900 ', '"entry 1900 \\q');
    expectError(await post(id, text), 400, 'bad_request');
    expect(await countOf(id)).toBe(0);
  });

  it('stores big batches in a row and at once, each its own entries (a reused body buffer leaks nothing)', async () => {
    const { id } = await createProject(t, owner);
    const batch = (tag: string, n: number) =>
      JSON.stringify({ logs: Array.from({ length: n }, (_, i) => ({ level: 'info', message: `${tag} ${i} ${'q'.repeat(900)}` })) });
    expect((await post(id, batch('first', 1_500))).statusCode).toBe(201);
    expect((await post(id, batch('second', 1_200))).statusCode).toBe(201);
    const together = await Promise.all([post(id, batch('third', 1_300)), post(id, batch('fourth', 1_100))]);
    expect(together.map((r) => r.statusCode)).toEqual([201, 201]);
    const rows = await queryRows<{ tag: string; n: number; longest: number }>(
      t.database.db,
      sql`select split_part(message, ' ', 1) as tag, count(*)::int as n, max(length(message))::int as longest
            from logs where project_id = ${id} group by 1 order by 1`,
    );
    expect(rows.map((r) => [r.tag, r.n])).toEqual([
      ['first', 1_500],
      ['fourth', 1_100],
      ['second', 1_200],
      ['third', 1_300],
    ]);
    expect(Math.max(...rows.map((r) => r.longest))).toBeLessThan(920);
  });

  it('stores a batch taking the zod path (a source to trim) across slices too', async () => {
    const { id } = await createProject(t, owner);
    const logs = entries(1_500).map((e, i) => (i === 1_400 ? { ...e, source: '  worker  ' } : e));
    const response = await post(id, JSON.stringify({ logs }));
    expect(response.statusCode, response.body).toBe(201);
    expect(await countOf(id)).toBe(1_500);
    const [row] = await queryRows<{ source: string }>(t.database.db, sql`select source from logs where project_id = ${id} and source is not null`);
    expect(row?.source).toBe('worker');
  });
});
