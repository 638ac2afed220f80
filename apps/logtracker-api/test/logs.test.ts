import { gzipSync } from 'node:zlib';
import { count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logs } from '../src/db/schema/index.js';
import { BatchBody, plainBatch } from '../src/modules/logs/logs.schemas.js';
import {
  addMember,
  buildTestApp,
  createLogs,
  createProject,
  createUser,
  expectError,
  type TestApp,
  type TestUser,
  type LogBody,
} from './helpers.js';


interface ListBody {
  data: LogBody[];
  meta: { current_page: number; per_page: number; total: number; last_page: number };
}

let t: TestApp;
let owner: TestUser;
let member: TestUser;
let stranger: TestUser;
let projectId: number;

beforeAll(async () => {
  t = await buildTestApp();
  owner = await createUser(t);
  member = await createUser(t);
  stranger = await createUser(t);
  projectId = (await createProject(t, owner)).id;
  await addMember(t, projectId, member);
});
afterAll(() => t.close());

/** Rows of a project, straight from the database: proves what was (not) written. */
async function countLogs(app: TestApp, id: number) {
  const [row] = await app.database.db.select({ n: count() }).from(logs).where(eq(logs.projectId, id));
  return row?.n ?? 0;
}

/** A project of its own, so that counts and orders are exact whatever other tests insert. */
async function freshProject(app: TestApp = t, who: TestUser = owner) {
  return (await createProject(app, who)).id;
}

/** A context object nested `depth` levels deep: `{ a: { a: … { a: 1 } } }`. */
function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = { a: 1 };
  for (let i = 1; i < depth; i++) value = { a: value };
  return value;
}

/** A JSON body; a string is sent as it is (raw JSON too deep for the injector to serialise). */
function jsonRequest(url: string, payload: unknown, who: TestUser | null) {
  return {
    method: 'POST' as const,
    url,
    headers: { ...(who ? who.headers : {}), 'content-type': 'application/json' },
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
  };
}

function postLog(projectIdParam: number, payload: unknown, who: TestUser | null = owner, app: TestApp = t) {
  return app.app.inject(jsonRequest(`/api/projects/${projectIdParam}/logs`, payload, who));
}

function postBatch(projectIdParam: number, payload: unknown, who: TestUser | null = owner, app: TestApp = t) {
  return app.app.inject(jsonRequest(`/api/projects/${projectIdParam}/logs/batch`, payload, who));
}

/** `{"a":{"a":…1…}}` nested `depth` levels deep, as JSON text. */
function deepJson(depth: number, open = '{"a":', close = '}') {
  return `${open.repeat(depth)}1${close.repeat(depth)}`;
}

function list(projectIdParam: number, query: Record<string, string> = {}, who: TestUser | null = owner) {
  return t.app.inject({
    method: 'GET',
    url: `/api/projects/${projectIdParam}/logs`,
    headers: who ? who.headers : {},
    query,
  });
}

describe('POST /api/projects/{project_id}/logs', () => {
  describe('happy path', () => {
    it('stores a minimal entry and stamps it with the time received', async () => {
      const before = Date.now();
      const response = await postLog(projectId, { level: 'info', message: 'service started' });
      const after = Date.now();
      expect(response.statusCode, response.body).toBe(201);
      const { data } = response.json() as { data: LogBody };
      expect(data).toMatchObject({
        project_id: projectId,
        level: 'info',
        message: 'service started',
        context: null,
        source: null,
      });
      expect(Number.isInteger(data.id)).toBe(true);
      expect(data.timestamp).toBe(data.received_at);
      expect(data.timestamp).toMatch(/Z$/);
      const stamped = Date.parse(data.timestamp);
      expect(stamped).toBeGreaterThanOrEqual(before);
      expect(stamped).toBeLessThanOrEqual(after);
    });

    it('keeps a submitted timestamp with an offset and returns it in UTC, with context and source', async () => {
      const context = { user_id: 42, tags: ['a', 'b'], nested: { ok: true, ratio: 0.5, none: null } };
      const response = await postLog(projectId, {
        level: 'error',
        message: 'payment failed',
        timestamp: '2026-01-02T05:04:05.250+02:00',
        context,
        source: 'billing-worker',
      });
      expect(response.statusCode, response.body).toBe(201);
      const { data } = response.json() as { data: LogBody };
      expect(data.timestamp).toBe('2026-01-02T03:04:05.250Z');
      expect(data.context).toEqual(context);
      expect(data.source).toBe('billing-worker');
      expect(Date.parse(data.received_at)).toBeGreaterThan(Date.parse(data.timestamp));

      const read = await t.app.inject({ method: 'GET', url: `/api/logs/${data.id}`, headers: owner.headers });
      expect(read.statusCode).toBe(200);
      expect((read.json() as { data: LogBody }).data).toEqual(data);
    });

    it('accepts every level of the enum', async () => {
      for (const level of ['error', 'warning', 'info', 'debug']) {
        const response = await postLog(projectId, { level, message: `a ${level}` });
        expect(response.statusCode, response.body).toBe(201);
        expect((response.json() as { data: LogBody }).data.level).toBe(level);
      }
    });

    it('keeps a context nested 32 levels deep', async () => {
      const response = await postLog(projectId, { level: 'debug', message: 'deep but fine', context: nested(32) });
      expect(response.statusCode, response.body).toBe(201);
      expect((response.json() as { data: LogBody }).data.context).toEqual(nested(32));
    });

    it('ignores unknown body fields', async () => {
      const response = await postLog(projectId, {
        level: 'info',
        message: 'extra fields',
        project_id: 999_999,
        id: 1,
        received_at: '2000-01-01T00:00:00Z',
      });
      expect(response.statusCode, response.body).toBe(201);
      const { data } = response.json() as { data: LogBody };
      expect(data.project_id).toBe(projectId);
      expect(data.received_at.startsWith('2000')).toBe(false);
    });

    it('keeps a context whose text merely looks like an escaped NUL', async () => {
      // A backslash followed by "u0000" is ordinary text, not a NUL character.
      const context = { path: 'C:\\u0000\\file', note: 'literal \\u0000' };
      const response = await postLog(projectId, { level: 'info', message: 'odd path', context });
      expect(response.statusCode, response.body).toBe(201);
      expect((response.json() as { data: LogBody }).data.context).toEqual(context);
    });
  });

  describe('errors', () => {
    const invalid: [string, Record<string, unknown> | string, string][] = [
      ['a missing level', { message: 'x' }, 'level'],
      ['a level outside the enum', { level: 'fatal', message: 'x' }, 'level'],
      ['a level of the wrong case', { level: 'ERROR', message: 'x' }, 'level'],
      ['a level that is not a string', { level: 3, message: 'x' }, 'level'],
      ['a missing message', { level: 'info' }, 'message'],
      ['an empty message', { level: 'info', message: '' }, 'message'],
      ['a message that is not a string', { level: 'info', message: { text: 'x' } }, 'message'],
      ['a context that is an array', { level: 'info', message: 'x', context: ['a', 'b'] }, 'context'],
      ['a context that is a string', { level: 'info', message: 'x', context: 'user=42' }, 'context'],
      ['a timestamp without a time zone', { level: 'info', message: 'x', timestamp: '2026-01-02T03:04:05' }, 'timestamp'],
      ['a timestamp that is not a date', { level: 'info', message: 'x', timestamp: 'yesterday' }, 'timestamp'],
      ['an impossible calendar date', { level: 'info', message: 'x', timestamp: '2026-02-30T03:04:05Z' }, 'timestamp'],
      ['a timestamp given as a number', { level: 'info', message: 'x', timestamp: 1767323045000 }, 'timestamp'],
      ['a message containing a NUL character', { level: 'info', message: 'before\u0000after' }, 'message'],
      ['a source containing a NUL character', { level: 'info', message: 'x', source: 'api\u0000' }, 'source'],
      ['a context containing a NUL character', { level: 'info', message: 'x', context: { k: 'v\u0000' } }, 'context.k'],
      ['a context key containing a NUL character', { level: 'info', message: 'x', context: { 'k\u0000': 'v' } }, 'context.k\uFFFD'],
      ['a context nested 33 levels deep', { level: 'info', message: 'x', context: nested(33) }, 'context'],
      // Over the context's bound of 32 levels, within the body's of 64 (a deeper body answers 400).
      ['a context nested 60 levels deep', `{"level":"info","message":"x","context":${deepJson(60)}}`, 'context'],
      ['a context holding nested arrays', `{"level":"info","message":"x","context":{"a":${deepJson(50, '[', ']')}}}`, 'context'],
      ['a source that is blank', { level: 'info', message: 'x', source: '   ' }, 'source'],
    ];

    for (const [what, payload, field] of invalid) {
      it(`answers 422 naming ${field} for ${what}, and stores nothing`, async () => {
        const id = await freshProject();
        const body = expectError(await postLog(id, payload), 422, 'validation_error');
        expect(body.errors, JSON.stringify(body)).toHaveProperty([field]);
        expect(body.errors?.[field]?.length).toBeGreaterThan(0);
        expect(await countLogs(t, id)).toBe(0);
      });
    }

    // Deep enough to overflow JSON.stringify when the row is written: must be refused, never a 500.
    it.each([
      ['a context nested 20 000 levels deep', `{"level":"info","message":"x","context":${deepJson(20_000)}}`],
      ['a context holding arrays nested 5 000 levels deep', `{"level":"info","message":"x","context":{"a":${deepJson(5_000, '[', ']')}}}`],
    ])('answers 400 for %s (the body nests deeper than 64 levels), and stores nothing', async (_what, payload) => {
      const id = await freshProject();
      const body = expectError(await postLog(id, payload), 400, 'bad_request');
      expect(body.message).toBe('JSON nesting deeper than 64 levels');
      expect(await countLogs(t, id)).toBe(0);
    });

    it('names every failing field at once', async () => {
      const body = expectError(await postLog(projectId, { level: 'loud', message: '', context: [] }), 422, 'validation_error');
      expect(Object.keys(body.errors ?? {}).sort()).toEqual(['context', 'level', 'message']);
    });

    it('answers 400 for malformed JSON', async () => {
      const response = await t.app.inject({
        method: 'POST',
        url: `/api/projects/${projectId}/logs`,
        headers: { ...owner.headers, 'content-type': 'application/json' },
        payload: '{"level": "info", "message": ',
      });
      expectError(response, 400, 'bad_request');
    });

    it('answers 422 for a non-numeric project id', async () => {
      const body = expectError(await postLog(Number.NaN, { level: 'info', message: 'x' }), 422, 'validation_error');
      expect(body.errors).toHaveProperty(['project_id']);
    });

    it('answers 404 for a project that does not exist', async () => {
      expectError(await postLog(2_000_000_000, { level: 'info', message: 'x' }), 404, 'not_found');
    });
  });

  describe('security', () => {
    it('lets a member who is not the owner submit', async () => {
      const response = await postLog(projectId, { level: 'warning', message: 'from a member' }, member);
      expect(response.statusCode, response.body).toBe(201);
      expect((response.json() as { data: LogBody }).data.project_id).toBe(projectId);
    });

    it('answers 404 to a user who is not a member, and stores nothing', async () => {
      const id = await freshProject();
      expectError(await postLog(id, { level: 'info', message: 'intrusion' }, stranger), 404, 'not_found');
      expect(await countLogs(t, id)).toBe(0);
    });

    it('answers 401 without a token', async () => {
      expectError(await postLog(projectId, { level: 'info', message: 'anonymous' }, null), 401, 'unauthenticated');
    });

    it('answers 401 for a forged token', async () => {
      const response = await t.app.inject({
        method: 'POST',
        url: `/api/projects/${projectId}/logs`,
        headers: { authorization: `${owner.headers.authorization}x` },
        payload: { level: 'info', message: 'forged' },
      });
      expectError(response, 401, 'unauthenticated');
    });
  });
});

describe('POST /api/projects/{project_id}/logs/batch', () => {
  let limited: TestApp;
  let limitedOwner: TestUser;
  let limitedProject: number;

  beforeAll(async () => {
    limited = await buildTestApp({ LOGS_BATCH_MAX_ENTRIES: '5', LOGS_BATCH_MAX_BYTES: '2048' });
    limitedOwner = await createUser(limited);
    limitedProject = (await createProject(limited, limitedOwner)).id;
  });
  afterAll(() => limited.close());

  describe('happy path', () => {
    it('answers 201 with the count accepted, and the logs are listable', async () => {
      const id = await freshProject();
      const response = await postBatch(id, {
        logs: [
          { level: 'error', message: 'first', timestamp: '2020-03-01T10:00:00Z', source: 'api' },
          { level: 'info', message: 'second', timestamp: '2020-03-01T11:00:00+01:00', context: { n: 2 } },
          { level: 'debug', message: 'third' },
        ],
      });
      expect(response.statusCode, response.body).toBe(201);
      expect((response.json() as { data: unknown }).data).toEqual({ accepted: 3 });

      const listed = await list(id);
      expect(listed.statusCode).toBe(200);
      const { data, meta } = listed.json() as ListBody;
      expect(meta.total).toBe(3);
      // "third" carries the time received (now), the other two are in March 2020 at the same instant.
      expect(data.map((l) => l.message)).toEqual(['third', 'second', 'first']);
      expect(data[1]).toMatchObject({ timestamp: '2020-03-01T10:00:00.000Z', context: { n: 2 }, source: null });
      expect(data[2]).toMatchObject({ timestamp: '2020-03-01T10:00:00.000Z', level: 'error', source: 'api' });
      // One batch is received at one instant.
      expect(new Set(data.map((l) => l.received_at)).size).toBe(1);
    });

    it('lets a member submit a batch', async () => {
      const response = await postBatch(projectId, { logs: [{ level: 'info', message: 'member batch' }] }, member);
      expect(response.statusCode, response.body).toBe(201);
      expect((response.json() as { data: unknown }).data).toEqual({ accepted: 1 });
    });

    it('stores a batch of 2 500 entries whole', async () => {
      const id = await freshProject();
      const entries = Array.from({ length: 2_500 }, (_, i) => ({
        level: (['error', 'warning', 'info', 'debug'] as const)[i % 4],
        message: `bulk entry ${i}`,
        context: { i },
        source: `worker-${i % 7}`,
      }));
      const response = await postBatch(id, { logs: entries });
      expect(response.statusCode, response.body).toBe(201);
      expect((response.json() as { data: unknown }).data).toEqual({ accepted: 2_500 });
      expect(await countLogs(t, id)).toBe(2_500);

      const errors = await list(id, { level: 'error', per_page: '1' });
      expect((errors.json() as ListBody).meta.total).toBe(625);
      const last = await list(id, { search: 'bulk entry 2499' });
      expect((last.json() as ListBody).data.map((l) => l.context)).toEqual([{ i: 2499 }]);
    });

    it('accepts a body above the server-wide 1 MiB limit when under the batch byte limit', async () => {
      const id = await freshProject();
      const message = 'x'.repeat(5_000);
      const entries = Array.from({ length: 300 }, () => ({ level: 'info', message }));
      expect(JSON.stringify({ logs: entries }).length).toBeGreaterThan(1024 * 1024);
      const response = await postBatch(id, { logs: entries });
      expect(response.statusCode, response.body).toBe(201);
      expect(await countLogs(t, id)).toBe(300);
    });
  });

  describe('compressed batches', () => {
    const gzipped = (body: unknown, who: TestUser = owner) => ({
      headers: { ...who.headers, 'content-type': 'application/json', 'content-encoding': 'gzip' },
      payload: gzipSync(Buffer.from(typeof body === 'string' ? body : JSON.stringify(body))),
    });

    it('stores a batch sent with Content-Encoding: gzip, as a shipper sends it', async () => {
      const id = await freshProject();
      const entries = Array.from({ length: 1_000 }, (_, i) => ({ level: i % 2 ? 'info' : 'error', message: `line ${i}` }));
      const response = await t.app.inject({ method: 'POST', url: `/api/projects/${id}/logs/batch`, ...gzipped({ logs: entries }) });
      expect(response.statusCode, response.body).toBe(201);
      expect(response.json().data).toEqual({ accepted: 1_000 });
      expect(await countLogs(t, id)).toBe(1_000);
    });

    it('counts the decompressed bytes against the batch limit: a small compressed bomb answers 413', async () => {
      const id = await freshProject();
      const message = 'x'.repeat(60_000);
      const bomb = { logs: Array.from({ length: 100 }, () => ({ level: 'info', message })) };
      const request = gzipped(bomb);
      expect(request.payload.length).toBeLessThan(100_000);
      expectError(await t.app.inject({ method: 'POST', url: `/api/projects/${id}/logs/batch`, ...request }), 413, 'payload_too_large');
      expect(await countLogs(t, id)).toBe(0);
    });

    it('answers 400 for a body that says gzip and is not, or an encoding it does not take', async () => {
      const id = await freshProject();
      const notGzip = { ...gzipped({ logs: [] }), payload: Buffer.from(JSON.stringify({ logs: [{ level: 'info', message: 'x' }] })) };
      expectError(await t.app.inject({ method: 'POST', url: `/api/projects/${id}/logs/batch`, ...notGzip }), 400, 'bad_request');
      const brotli = { ...gzipped({ logs: [] }), headers: { ...owner.headers, 'content-type': 'application/json', 'content-encoding': 'br' } };
      expectError(await t.app.inject({ method: 'POST', url: `/api/projects/${id}/logs/batch`, ...brotli }), 400, 'bad_request');
      expect(await countLogs(t, id)).toBe(0);
    });
  });

  describe('plain batches', () => {
    // A batch whose every field is in its plainest form is validated by plainBatch and stored from
    // its JSON text; any other goes through zod and is stored from the validated entries. Both
    // must store the same logs.
    const entries = [
      { level: 'error', message: 'offset and microseconds', timestamp: '2026-02-03T04:05:06.123987+02:00', source: 'api' },
      { level: 'warning', message: 'no timestamp', context: { nested: { list: [1, 'two', null] }, big: 12.5 }, source: null },
      { level: 'info', message: 'unknown fields are ignored', project_id: 999, received_at: '1999-01-01T00:00:00Z', id: 5 },
      { level: 'debug', message: 'quotes " and \\ and \u00e9 and \n', context: null, timestamp: '2026-02-03T02:05:06Z' },
    ];

    async function stored(projectId: number) {
      const { data } = (await list(projectId)).json() as ListBody;
      return data
        .map(({ id: _, project_id: __, received_at, ...log }) => ({ ...log, timestamp: log.timestamp === received_at ? 'received' : log.timestamp }))
        .sort((a, b) => a.message.localeCompare(b.message));
    }

    it('stores the same logs whichever way the batch was validated', async () => {
      const plain = await freshProject();
      const other = await freshProject();
      expect((await postBatch(plain, { logs: entries })).statusCode).toBe(201);
      // A source to trim is not plain: this batch takes the zod path.
      const zodPath = [...entries, { level: 'info', message: 'trimmed', source: '  worker  ' }];
      expect((await postBatch(other, { logs: zodPath })).statusCode).toBe(201);

      const fromPlain = await stored(plain);
      const fromZod = (await stored(other)).filter((l) => l.message !== 'trimmed');
      expect(fromPlain).toEqual(fromZod);
      expect(fromPlain.find((l) => l.message === 'offset and microseconds')).toMatchObject({ timestamp: '2026-02-03T02:05:06.123Z', source: 'api' });
      expect(fromPlain.find((l) => l.message === 'no timestamp')?.context).toEqual({ nested: { list: [1, 'two', null] }, big: 12.5 });
      expect((await list(other, { search: 'trimmed' })).json().data[0].source).toBe('worker');
    });

    it('answers what BatchBody answers, for every batch it takes', () => {
      let seed = 11;
      const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
      const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
      // Per field, the forms plainBatch takes and others (which BatchBody may or may not take).
      const variants: Record<string, { plain: readonly unknown[]; other: readonly unknown[] }> = {
        level: { plain: ['info', 'error', 'warning', 'debug'], other: ['INFO', 'fatal', '', 3, null, undefined] },
        message: { plain: ['ok', 'x'.repeat(65_536), '  spaced  ', 'é ü ✓'], other: ['', 'x'.repeat(65_537), 'nul \u0000 inside', 7, null, undefined] },
        context: {
          plain: [undefined, null, {}, { a: 1 }, { a: { b: ['c'] } }],
          other: [[], 'text', 5, { 'k\u0000': 1 }, { a: 'v\u0000' }, nested(33)],
        },
        timestamp: {
          plain: [undefined, '2026-02-03T04:05:06Z', '2026-02-03T04:05:06.1+05:30', '2099-12-31T23:59:59.999999-01:00', '1970-01-01T00:00:00Z'],
          other: [
            null, '2026-02-03T04:05:06.1234567Z', '2026-02-30T04:05:06Z', '2026-02-03 04:05:06Z', '2026-02-03T04:05:06',
            '1969-12-31T23:59:59Z', '2100-01-01T00:00:00Z', 1_700_000_000_000,
          ],
        },
        source: { plain: [undefined, null, 'api', 'a'.repeat(255)], other: ['', ' api', 'api ', '\tapi', 'a'.repeat(256), 's\u0000', 4, ' '] },
      };
      let taken = 0;
      let leftToZod = 0;
      for (let i = 0; i < 3_000; i++) {
        const logs = Array.from({ length: 1 + Math.floor(random() * 3) }, () => {
          const entry: Record<string, unknown> = {};
          for (const [field, { plain, other }] of Object.entries(variants)) {
            const value = pick(random() < 0.08 ? other : plain);
            if (value !== undefined) entry[field] = value;
          }
          return entry;
        });
        const body = JSON.parse(JSON.stringify({ logs }));
        const fast = plainBatch(body);
        if (!fast) {
          if (BatchBody.safeParse(body).success) leftToZod += 1;
          continue;
        }
        taken += 1;
        const full = BatchBody.safeParse(body);
        expect(full.success, JSON.stringify(body)).toBe(true);
        expect(fast).toEqual(full.data);
      }
      // The plain forms are common enough among these variants that the comparison means something.
      expect(taken).toBeGreaterThan(500);
      // And valid batches in other forms do reach zod (a source to trim, say).
      expect(leftToZod).toBeGreaterThan(10);
      expect(plainBatch({ logs: [{ level: 'info', message: 'plain', source: 'api', timestamp: '2026-02-03T04:05:06.123Z', context: { a: 1 } }] })).toBeDefined();
    });
  });

  describe('errors', () => {
    it('answers 422 naming logs.<i>.<field> for one bad entry among many, and writes nothing', async () => {
      const id = await freshProject();
      await createLogs(t, id, [{ message: 'already there' }]);
      const entries = Array.from({ length: 10 }, (_, i) => ({ level: 'info', message: `entry ${i}` }));
      entries[2] = { level: 'critical', message: 'entry 2' };
      const body = expectError(await postBatch(id, { logs: entries }), 422, 'validation_error');
      expect(Object.keys(body.errors ?? {})).toEqual(['logs.2.level']);
      expect(await countLogs(t, id)).toBe(1);
    });

    it('names every bad entry and field of a batch', async () => {
      const id = await freshProject();
      const entries = [
        { level: 'info', message: 'fine' },
        { level: 'info', message: '' },
        { level: 'info', message: 'ok', timestamp: '2026-01-02 03:04:05' },
        { level: 'info', message: 'ok', context: [1] },
        { message: 'no level' },
      ].map((e) => JSON.stringify(e));
      entries.push(`{"level":"info","message":"too deep","context":${deepJson(40)}}`);
      const body = expectError(await postBatch(id, `{"logs":[${entries.join(',')}]}`), 422, 'validation_error');
      expect(Object.keys(body.errors ?? {}).sort()).toEqual([
        'logs.1.message',
        'logs.2.timestamp',
        'logs.3.context',
        'logs.4.level',
        'logs.5.context',
      ]);
      expect(await countLogs(t, id)).toBe(0);
    });

    it('writes nothing when the last of 2 000 entries carries a NUL character', async () => {
      const id = await freshProject();
      const entries = Array.from({ length: 2_000 }, (_, i) => ({ level: 'info', message: `entry ${i}` }));
      entries[1_999] = { level: 'info', message: 'bad\u0000' };
      const body = expectError(await postBatch(id, { logs: entries }), 422, 'validation_error');
      expect(Object.keys(body.errors ?? {})).toEqual(['logs.1999.message']);
      expect(await countLogs(t, id)).toBe(0);
    });

    it('answers 422 for an empty array', async () => {
      const body = expectError(await postBatch(projectId, { logs: [] }), 422, 'validation_error');
      expect(body.errors).toHaveProperty(['logs']);
    });

    it('answers 422 when logs is missing', async () => {
      const body = expectError(await postBatch(projectId, { entries: [{ level: 'info', message: 'x' }] }), 422, 'validation_error');
      expect(body.errors).toHaveProperty(['logs']);
    });

    it('answers 422 when logs is not an array', async () => {
      const body = expectError(await postBatch(projectId, { logs: { level: 'info', message: 'x' } }), 422, 'validation_error');
      expect(body.errors).toHaveProperty(['logs']);
    });

    it('answers 422 when the body is a bare array', async () => {
      expectError(await postBatch(projectId, [{ level: 'info', message: 'x' }]), 422, 'validation_error');
    });

    it('answers 400 for malformed JSON', async () => {
      const response = await t.app.inject({
        method: 'POST',
        url: `/api/projects/${projectId}/logs/batch`,
        headers: { ...owner.headers, 'content-type': 'application/json' },
        payload: '{"logs": [{"level": "info", "message": "x"},]}',
      });
      expectError(response, 400, 'bad_request');
    });

    it('answers 413 payload_too_large for more entries than the limit, and writes nothing', async () => {
      const entries = Array.from({ length: 6 }, (_, i) => ({ level: 'info', message: `m${i}` }));
      const body = expectError(
        await postBatch(limitedProject, { logs: entries }, limitedOwner, limited),
        413,
        'payload_too_large',
      );
      expect(body.message).toContain('5');
      expect(await countLogs(limited, limitedProject)).toBe(0);
    });

    it('accepts exactly the entry limit', async () => {
      const id = await freshProject(limited, limitedOwner);
      const entries = Array.from({ length: 5 }, (_, i) => ({ level: 'info', message: `m${i}` }));
      const response = await postBatch(id, { logs: entries }, limitedOwner, limited);
      expect(response.statusCode, response.body).toBe(201);
      expect(await countLogs(limited, id)).toBe(5);
    });

    it('answers 413 payload_too_large for a body over the byte limit, and writes nothing', async () => {
      const entries = Array.from({ length: 3 }, () => ({ level: 'info', message: 'y'.repeat(1_000) }));
      expect(JSON.stringify({ logs: entries }).length).toBeGreaterThan(2048);
      expectError(await postBatch(limitedProject, { logs: entries }, limitedOwner, limited), 413, 'payload_too_large');
      expect(await countLogs(limited, limitedProject)).toBe(0);
    });

    it('answers 413 beyond the default limit of 10 000 entries', async () => {
      const id = await freshProject();
      const entries = Array.from({ length: 10_001 }, () => ({ level: 'info', message: 'm' }));
      expectError(await postBatch(id, { logs: entries }), 413, 'payload_too_large');
      expect(await countLogs(t, id)).toBe(0);
    });
  });

  describe('security', () => {
    it('answers 404 to a user who is not a member, and writes nothing', async () => {
      const id = await freshProject();
      expectError(await postBatch(id, { logs: [{ level: 'info', message: 'x' }] }, stranger), 404, 'not_found');
      expect(await countLogs(t, id)).toBe(0);
    });

    it('answers 401 without a token', async () => {
      expectError(await postBatch(projectId, { logs: [{ level: 'info', message: 'x' }] }, null), 401, 'unauthenticated');
    });
  });
});

describe('GET /api/projects/{project_id}/logs', () => {
  describe('happy path', () => {
    it('lists newest first by timestamp, then by id for equal timestamps', async () => {
      const id = await freshProject();
      const same = new Date('2026-04-01T12:00:00Z');
      const [a, b, c, d] = await createLogs(t, id, [
        { message: 'a', timestamp: same },
        { message: 'b', timestamp: new Date('2026-04-01T13:00:00Z') },
        { message: 'c', timestamp: same },
        { message: 'd', timestamp: new Date('2026-04-01T11:00:00Z') },
      ]);
      expect(a && b && c && d).toBeTruthy();
      const response = await list(id);
      expect(response.statusCode).toBe(200);
      const { data } = response.json() as ListBody;
      expect(data.map((l) => l.message)).toEqual(['b', 'c', 'a', 'd']);
      expect(data.map((l) => l.id)).toEqual([b?.id, c?.id, a?.id, d?.id]);
      expect(data[0]).toEqual({
        id: b?.id,
        project_id: id,
        level: 'info',
        message: 'b',
        context: null,
        source: null,
        timestamp: '2026-04-01T13:00:00.000Z',
        received_at: b?.receivedAt.toISOString(),
        pattern_id: null,
      });
    });

    it('shows only the logs of the project asked for', async () => {
      const mine = await freshProject();
      const other = await freshProject();
      await createLogs(t, mine, [{ message: 'mine' }]);
      await createLogs(t, other, [{ message: 'other' }]);
      const { data, meta } = (await list(mine)).json() as ListBody;
      expect(data.map((l) => l.message)).toEqual(['mine']);
      expect(meta.total).toBe(1);
    });

    it('answers an empty page for a project without logs', async () => {
      const id = await freshProject();
      const response = await list(id);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({
        data: [],
        meta: { current_page: 1, per_page: 50, total: 0, last_page: 1, total_is_estimate: false, next_cursor: null },
      });
    });

    describe('filters', () => {
      let id: number;
      beforeAll(async () => {
        id = await freshProject();
        await createLogs(t, id, [
          { level: 'error', message: 'Database connection LOST', source: 'db', timestamp: new Date('2026-05-01T10:00:00Z') },
          { level: 'error', message: 'database timeout', source: 'api', timestamp: new Date('2026-05-02T10:00:00Z') },
          { level: 'warning', message: 'database slow', source: 'db', timestamp: new Date('2026-05-02T11:00:00Z') },
          { level: 'info', message: 'user login', source: 'api', timestamp: new Date('2026-05-03T10:00:00Z') },
          { level: 'error', message: 'cache miss storm', source: 'API', timestamp: new Date('2026-05-03T12:00:00Z') },
          { level: 'debug', message: 'DATABASE query plan', timestamp: new Date('2026-05-04T10:00:00Z') },
        ]);
      });

      const messages = async (query: Record<string, string>) => {
        const response = await list(id, query);
        expect(response.statusCode, response.body).toBe(200);
        const body = response.json() as ListBody;
        expect(body.meta.total).toBe(body.data.length);
        return body.data.map((l) => l.message);
      };

      it('filters by level', async () => {
        expect(await messages({ level: 'error' })).toEqual(['cache miss storm', 'database timeout', 'Database connection LOST']);
        expect(await messages({ level: 'debug' })).toEqual(['DATABASE query plan']);
      });

      it('filters by source, exactly (case and all) once trimmed, and with the other filters', async () => {
        expect(await messages({ source: 'db' })).toEqual(['database slow', 'Database connection LOST']);
        expect(await messages({ source: '  api ' })).toEqual(['user login', 'database timeout']);
        expect(await messages({ source: 'API' })).toEqual(['cache miss storm']);
        expect(await messages({ source: 'ap' })).toEqual([]);
        expect(await messages({ source: 'db', level: 'error' })).toEqual(['Database connection LOST']);
        expect(await messages({ source: 'api', search: 'DATABASE' })).toEqual(['database timeout']);
        expect(await messages({ source: 'db', from_date: '2026-05-02T00:00:00Z', to_date: '2026-05-04T00:00:00Z' })).toEqual(['database slow']);
        // A page by cursor keeps the filter.
        const first = (await list(id, { source: 'db', per_page: '1' })).json() as ListBody;
        expect(first.data.map((l) => l.message)).toEqual(['database slow']);
        expect(first.meta.total).toBe(2);
        const next = (await list(id, { source: 'db', per_page: '1', cursor: (first.meta as unknown as { next_cursor: string }).next_cursor })).json() as ListBody;
        expect(next.data.map((l) => l.message)).toEqual(['Database connection LOST']);
      });

      it('filters by date range, both bounds inclusive', async () => {
        expect(await messages({ from_date: '2026-05-02T10:00:00Z', to_date: '2026-05-03T10:00:00Z' })).toEqual([
          'user login',
          'database slow',
          'database timeout',
        ]);
        expect(await messages({ from_date: '2026-05-03T12:00:00Z' })).toEqual(['DATABASE query plan', 'cache miss storm']);
        expect(await messages({ to_date: '2026-05-01T10:00:00Z' })).toEqual(['Database connection LOST']);
      });

      it('reads date bounds with an offset as the instant they name', async () => {
        // 12:00+02:00 is 10:00Z.
        expect(await messages({ from_date: '2026-05-04T12:00:00+02:00' })).toEqual(['DATABASE query plan']);
        expect(await messages({ to_date: '2026-05-01T11:59:59+02:00' })).toEqual([]);
      });

      it('searches case-insensitively for a substring of the message', async () => {
        expect(await messages({ search: 'database' })).toEqual([
          'DATABASE query plan',
          'database slow',
          'database timeout',
          'Database connection LOST',
        ]);
        expect(await messages({ search: 'lost' })).toEqual(['Database connection LOST']);
        expect(await messages({ search: 'ss st' })).toEqual(['cache miss storm']);
        expect(await messages({ search: 'nothing like this' })).toEqual([]);
      });

      it('combines level, date range and search', async () => {
        expect(
          await messages({
            level: 'error',
            search: 'DATABASE',
            from_date: '2026-05-01T12:00:00Z',
            to_date: '2026-05-04T23:00:00Z',
          }),
        ).toEqual(['database timeout']);
        expect(await messages({ level: 'warning', search: 'database', to_date: '2026-05-02T10:30:00Z' })).toEqual([]);
      });
    });

    it('takes %, _ and \\ in the search text literally', async () => {
      const id = await freshProject();
      await createLogs(t, id, [
        { message: 'disk 50% full' },
        { message: 'disk 500 full' },
        { message: 'user_id missing' },
        { message: 'userXid' },
        { message: 'path C:\\temp\\x' },
        { message: 'path C:temp' },
      ]);
      const search = async (text: string) => {
        const response = await list(id, { search: text });
        expect(response.statusCode, response.body).toBe(200);
        return (response.json() as ListBody).data.map((l) => l.message);
      };
      expect(await search('50%')).toEqual(['disk 50% full']);
      expect(await search('%')).toEqual(['disk 50% full']);
      expect(await search('_id')).toEqual(['user_id missing']);
      expect(await search('_')).toEqual(['user_id missing']);
      expect(await search('\\temp')).toEqual(['path C:\\temp\\x']);
      expect(await search('\\')).toEqual(['path C:\\temp\\x']);
      expect(await search('disk 50')).toEqual(['disk 50% full', 'disk 500 full']);
    });

    it('paginates with page and per_page and reports meta', async () => {
      const id = await freshProject();
      const base = Date.parse('2026-06-01T00:00:00Z');
      await createLogs(
        t,
        id,
        Array.from({ length: 7 }, (_, i) => ({ message: `p${i}`, timestamp: new Date(base + i * 60_000) })),
      );
      const page = async (query: Record<string, string>) => {
        const response = await list(id, query);
        expect(response.statusCode, response.body).toBe(200);
        return response.json() as ListBody;
      };

      const first = await page({ per_page: '3' });
      expect(first.meta).toMatchObject({ current_page: 1, per_page: 3, total: 7, last_page: 3, total_is_estimate: false });
      expect(first.data.map((l) => l.message)).toEqual(['p6', 'p5', 'p4']);

      const second = await page({ per_page: '3', page: '2' });
      expect(second.meta).toMatchObject({ current_page: 2, per_page: 3, total: 7, last_page: 3, total_is_estimate: false });
      expect(second.data.map((l) => l.message)).toEqual(['p3', 'p2', 'p1']);

      const third = await page({ per_page: '3', page: '3' });
      expect(third.data.map((l) => l.message)).toEqual(['p0']);

      const beyond = await page({ per_page: '3', page: '4' });
      expect(beyond.data).toEqual([]);
      expect(beyond.meta).toMatchObject({ current_page: 4, per_page: 3, total: 7, last_page: 3, total_is_estimate: false });

      const filtered = await page({ per_page: '2', search: 'p', page: '2' });
      expect(filtered.meta).toMatchObject({ current_page: 2, per_page: 2, total: 7, last_page: 4, total_is_estimate: false });
    });

    it('pages 50 by default and up to 500', async () => {
      const id = await freshProject();
      await createLogs(t, id, Array.from({ length: 501 }, (_, i) => ({ message: `n${i}` })));

      const byDefault = (await list(id)).json() as ListBody;
      expect(byDefault.data).toHaveLength(50);
      expect(byDefault.meta).toMatchObject({ current_page: 1, per_page: 50, total: 501, last_page: 11, total_is_estimate: false });

      const max = (await list(id, { per_page: '500' })).json() as ListBody;
      expect(max.data).toHaveLength(500);
      expect(max.meta).toMatchObject({ current_page: 1, per_page: 500, total: 501, last_page: 2, total_is_estimate: false });
      // n0 is the newest (createLogs spaces them one second apart, going back in time).
      expect(max.data[0]?.message).toBe('n0');
      expect(max.data[499]?.message).toBe('n499');
      // Deep pages skip the logs before them by key: the same rows, in the same order.
      const deep = (await list(id, { per_page: '100', page: '6' })).json() as ListBody;
      expect(deep.data.map((l) => l.message)).toEqual(['n500']);
      const deeper = (await list(id, { per_page: '20', page: '26', level: 'info' })).json() as ListBody;
      expect(deeper.data.map((l) => l.message)).toEqual(['n500']);
      const middle = (await list(id, { per_page: '3', page: '167' })).json() as ListBody;
      expect(middle.data.map((l) => l.message)).toEqual(['n498', 'n499', 'n500']);
    });

    it('answers HEAD like the GET', async () => {
      const response = await t.app.inject({ method: 'HEAD', url: `/api/projects/${projectId}/logs`, headers: owner.headers });
      expect(response.statusCode).toBe(200);
      expect(response.body).toBe('');
    });

    it('lets a member list', async () => {
      const response = await list(projectId, {}, member);
      expect(response.statusCode).toBe(200);
      expect((response.json() as ListBody).meta.total).toBeGreaterThan(0);
    });
  });

  describe('errors', () => {
    const invalid: [string, Record<string, string>, string][] = [
      ['per_page above 500', { per_page: '501' }, 'per_page'],
      ['per_page 0', { per_page: '0' }, 'per_page'],
      ['a fractional per_page', { per_page: '2.5' }, 'per_page'],
      ['page 0', { page: '0' }, 'page'],
      ['a negative page', { page: '-1' }, 'page'],
      ['a page that is not a number', { page: 'two' }, 'page'],
      ['a level outside the enum', { level: 'fatal' }, 'level'],
      ['an invalid from_date', { from_date: 'not-a-date' }, 'from_date'],
      ['a to_date without a time zone', { to_date: '2026-05-01T10:00:00' }, 'to_date'],
      ['an impossible date', { from_date: '2026-13-01T00:00:00Z' }, 'from_date'],
      ['an empty search', { search: '' }, 'search'],
      ['a search with a NUL character', { search: 'a\u0000b' }, 'search'],
      ['an empty source', { source: '' }, 'source'],
      ['a source of spaces only', { source: '   ' }, 'source'],
      ['a source over 255 characters', { source: 'x'.repeat(256) }, 'source'],
    ];
    for (const [what, query, field] of invalid) {
      it(`answers 422 naming ${field} for ${what}`, async () => {
        const body = expectError(await list(projectId, query), 422, 'validation_error');
        expect(body.errors, JSON.stringify(body)).toHaveProperty([field]);
      });
    }

    it('answers 422 pointing to the cursor for a page past the 10 000th log, and pages up to it', async () => {
      const body = expectError(await list(projectId, { page: '201', per_page: '50' }), 422, 'validation_error');
      expect(JSON.stringify(body.errors?.page)).toContain('cursor');
      expectError(await list(projectId, { page: '21', per_page: '500' }), 422, 'validation_error');
      expect((await list(projectId, { page: '200', per_page: '50' })).statusCode).toBe(200);
      expect((await list(projectId, { page: '20', per_page: '500', search: 'a' })).statusCode).toBe(200);
    });

    it('answers 422 naming to_date when from_date is after to_date', async () => {
      const body = expectError(
        await list(projectId, { from_date: '2026-05-02T00:00:00Z', to_date: '2026-05-01T00:00:00Z' }),
        422,
        'validation_error',
      );
      expect(Object.keys(body.errors ?? {})).toEqual(['to_date']);
    });
  });

  describe('security', () => {
    it("answers 404 for another user's project", async () => {
      const id = await freshProject();
      await createLogs(t, id, [{ message: 'secret' }]);
      expectError(await list(id, {}, stranger), 404, 'not_found');
    });

    it('answers 404 for a project that does not exist', async () => {
      expectError(await list(2_000_000_000), 404, 'not_found');
    });

    it('answers 401 without a token', async () => {
      expectError(await list(projectId, {}, null), 401, 'unauthenticated');
    });
  });
});

describe('GET /api/logs/{id}', () => {
  const get = (id: number | string, who: TestUser | null = owner) =>
    t.app.inject({ method: 'GET', url: `/api/logs/${id}`, headers: who ? who.headers : {} });

  it("answers 200 with a log of the caller's project, to the owner and to a member", async () => {
    const [log] = await createLogs(t, projectId, [
      { level: 'warning', message: 'readable', context: { a: 1 }, source: 'cron', timestamp: new Date('2026-07-01T00:00:00Z') },
    ]);
    if (!log) throw new Error('no log');
    for (const who of [owner, member]) {
      const response = await get(log.id, who);
      expect(response.statusCode, response.body).toBe(200);
      expect((response.json() as { data: LogBody }).data).toEqual({
        id: log.id,
        project_id: projectId,
        level: 'warning',
        message: 'readable',
        context: { a: 1 },
        source: 'cron',
        timestamp: '2026-07-01T00:00:00.000Z',
        received_at: log.receivedAt.toISOString(),
        pattern_id: null,
      });
    }
  });

  it("answers 404, not 403, for a log of another user's project", async () => {
    const otherOwner = await createUser(t);
    const otherProject = await createProject(t, otherOwner);
    const [log] = await createLogs(t, otherProject.id, [{ message: 'not yours' }]);
    if (!log) throw new Error('no log');
    expectError(await get(log.id), 404, 'not_found');
    expectError(await get(log.id, member), 404, 'not_found');
    expect((await get(log.id, otherOwner)).statusCode).toBe(200);
  });

  it('answers 404 for an unknown id', async () => {
    expectError(await get(9_007_199_254_740_991), 404, 'not_found');
  });

  it('answers 422 for an id that is not a positive integer', async () => {
    for (const bad of ['abc', '0', '-3', '1.5', '99999999999999999999']) {
      const body = expectError(await get(bad), 422, 'validation_error');
      expect(body.errors, bad).toHaveProperty(['id']);
    }
  });

  it('answers 401 without a token', async () => {
    const [log] = await createLogs(t, projectId, [{ message: 'x' }]);
    if (!log) throw new Error('no log');
    expectError(await get(log.id, null), 401, 'unauthenticated');
  });
});

describe('reads whose session and membership are checked alongside them', () => {
  // The logs list, one log and the statistics start their reads while the session (and for a
  // project's pages, the membership) is checked: what the caller may no longer see never reaches it.
  it('answer 401 once the session is revoked, for a log that exists as for one that does not', async () => {
    const reader = await createUser(t);
    const project = await createProject(t, reader);
    const [log] = await createLogs(t, project.id, [{ message: 'before logout' }]);
    if (!log) throw new Error('no log');
    const urls = [`/api/projects/${project.id}/logs`, `/api/projects/${project.id}/logs?search=before`, `/api/logs/${log.id}`, '/api/logs/9007199254740991', `/api/projects/${project.id}/stats`];
    for (const url of urls) expect((await t.app.inject({ method: 'GET', url, headers: reader.headers })).statusCode, url).not.toBe(401);
    expect((await t.app.inject({ method: 'POST', url: '/api/auth/logout', headers: reader.headers })).statusCode).toBe(200);
    for (const url of urls) expectError(await t.app.inject({ method: 'GET', url, headers: reader.headers }), 401, 'unauthenticated');
  });

  it("answer 404 to a stranger, whatever the project's reads found", async () => {
    const [log] = await createLogs(t, projectId, [{ message: 'members only' }]);
    if (!log) throw new Error('no log');
    for (const url of [`/api/projects/${projectId}/logs`, `/api/projects/${projectId}/logs?search=members`, `/api/projects/${projectId}/logs?page=99`, `/api/projects/${projectId}/stats`, `/api/logs/${log.id}`]) {
      expectError(await t.app.inject({ method: 'GET', url, headers: stranger.headers }), 404, 'not_found');
    }
  });
});
