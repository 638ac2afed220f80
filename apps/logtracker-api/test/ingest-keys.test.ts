import { hashToken } from '@repo/auth';
import { count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestKeys, logs } from '../src/db/schema/index.js';
import { addMember, buildTestApp, createLogs, createProject, createUser, expectError, type TestApp, type TestUser } from './helpers.js';

interface KeyBody {
  id: number;
  project_id: number;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

interface CreatedKeyBody extends KeyBody {
  key: string;
}

interface LogBody {
  id: number;
  project_id: number;
  level: string;
  message: string;
  source: string | null;
  context: Record<string, unknown> | null;
}

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';
type Headers = Record<string, string>;

const KEY_FIELDS = ['created_at', 'id', 'last_used_at', 'name', 'prefix', 'project_id', 'revoked_at'];

/** The two ways a pipeline may present its key. */
const presentations: [string, (key: string) => Headers][] = [
  ['Authorization: Bearer', (key) => ({ authorization: `Bearer ${key}` })],
  ['X-Ingest-Key', (key) => ({ 'x-ingest-key': key })],
];

let t: TestApp;
let owner: TestUser;
let member: TestUser;
let stranger: TestUser;
let projectId: number;
let otherProjectId: number;

beforeAll(async () => {
  t = await buildTestApp();
  owner = await createUser(t);
  member = await createUser(t);
  stranger = await createUser(t);
  projectId = (await createProject(t, owner)).id;
  otherProjectId = (await createProject(t, owner)).id;
  await addMember(t, projectId, member);
});
afterAll(() => t.close());

const keysUrl = (id: number | string) => `/api/projects/${id}/ingest-keys`;

function call(app: TestApp, method: Method, url: string, headers: Headers, payload?: object) {
  return app.app.inject({ method, url, headers, payload });
}

async function createKey(app: TestApp = t, who: TestUser = owner, id: number = projectId, name = 'CI pipeline') {
  const response = await call(app, 'POST', keysUrl(id), who.headers, { name });
  expect(response.statusCode, response.body).toBe(201);
  return (response.json() as { data: CreatedKeyBody }).data;
}

function postLog(app: TestApp, id: number, headers: Headers, payload: object = { level: 'info', message: 'from CI' }) {
  return call(app, 'POST', `/api/projects/${id}/logs`, headers, payload);
}

function postBatch(app: TestApp, id: number, headers: Headers, entries: object[]) {
  return call(app, 'POST', `/api/projects/${id}/logs/batch`, headers, { logs: entries });
}

async function countLogs(id: number) {
  const [row] = await t.database.db.select({ n: count() }).from(logs).where(eq(logs.projectId, id));
  return row?.n ?? 0;
}

async function listKeys(who: TestUser = owner, id: number = projectId) {
  const response = await call(t, 'GET', keysUrl(id), who.headers);
  expect(response.statusCode, response.body).toBe(200);
  return { response, keys: (response.json() as { data: KeyBody[] }).data };
}

describe('POST /api/projects/{project_id}/ingest-keys', () => {
  it('creates a key for the owner and shows it once, with its prefix', async () => {
    const before = Date.now();
    const response = await call(t, 'POST', keysUrl(projectId), owner.headers, { name: '  GitHub Actions  ' });
    expect(response.statusCode, response.body).toBe(201);
    const body = response.json() as { data: CreatedKeyBody; message: string };
    expect(typeof body.message).toBe('string');
    const { key, ...rest } = body.data;
    expect(key).toMatch(/^ltk_[A-Za-z0-9_-]{20,}$/);
    expect(Object.keys(rest).sort()).toEqual(KEY_FIELDS);
    expect(rest).toMatchObject({
      project_id: projectId,
      name: 'GitHub Actions',
      last_used_at: null,
      revoked_at: null,
    });
    expect(Number.isInteger(rest.id)).toBe(true);
    expect(rest.prefix.startsWith('ltk_')).toBe(true);
    expect(key.startsWith(rest.prefix)).toBe(true);
    expect(rest.prefix.length).toBeLessThan(key.length / 2);
    expect(Date.parse(rest.created_at)).toBeGreaterThanOrEqual(before - 1000);

    // Stored hashed, never in clear.
    const [row] = await t.database.db.select().from(ingestKeys).where(eq(ingestKeys.id, rest.id));
    expect(row?.keyHash).toBe(hashToken(key));
    expect(JSON.stringify(row)).not.toContain(key);
  });

  it('makes a different key every time', async () => {
    const a = await createKey();
    const b = await createKey();
    expect(a.key).not.toBe(b.key);
    expect(a.id).not.toBe(b.id);
  });

  it.each([
    ['an empty name', { name: '' }],
    ['a blank name', { name: '   ' }],
    ['no name', {}],
    ['a name of the wrong type', { name: 7 }],
    ['a name too long', { name: 'x'.repeat(101) }],
  ])('answers 422 on name for %s', async (_what, payload) => {
    const error = expectError(await call(t, 'POST', keysUrl(projectId), owner.headers, payload), 422, 'validation_error');
    expect(error.errors?.name?.length).toBeGreaterThan(0);
  });

  it('answers 403 to a member, 404 to a stranger, 401 without a token', async () => {
    expectError(await call(t, 'POST', keysUrl(projectId), member.headers, { name: 'sneaky' }), 403, 'forbidden');
    expectError(await call(t, 'POST', keysUrl(projectId), stranger.headers, { name: 'sneaky' }), 404, 'not_found');
    expectError(await call(t, 'POST', keysUrl(projectId), {}, { name: 'sneaky' }), 401, 'unauthenticated');
    const { keys } = await listKeys();
    expect(keys.map((k) => k.name)).not.toContain('sneaky');
  });

  it('answers 404 for a project that does not exist and 422 for a bad project id', async () => {
    expectError(await call(t, 'POST', keysUrl(2_147_483_647), owner.headers, { name: 'x' }), 404, 'not_found');
    expectError(await call(t, 'POST', keysUrl('abc'), owner.headers, { name: 'x' }), 422, 'validation_error');
  });

  it('cannot be created with an ingest key', async () => {
    const { key } = await createKey();
    for (const [, headers] of presentations) {
      expectError(await call(t, 'POST', keysUrl(projectId), headers(key), { name: 'minted by a key' }), 401, 'unauthenticated');
    }
  });
});

describe('GET /api/projects/{project_id}/ingest-keys', () => {
  it('lists the keys newest first, by prefix only: never the key nor its hash', async () => {
    const id = (await createProject(t, owner)).id;
    const first = await createKey(t, owner, id, 'first');
    const second = await createKey(t, owner, id, 'second');
    const { response, keys } = await listKeys(owner, id);
    expect(keys.map((k) => k.name)).toEqual(['second', 'first']);
    expect(keys.map((k) => k.prefix)).toEqual([second.prefix, first.prefix]);
    for (const k of keys) expect(Object.keys(k).sort()).toEqual(KEY_FIELDS);
    for (const created of [first, second]) {
      expect(response.body).not.toContain(created.key);
      expect(response.body).not.toContain(hashToken(created.key));
    }
    expect(response.body).not.toMatch(/hash/i);
  });

  it('answers 403 to a member, 404 to a stranger, 401 without a token or with an ingest key', async () => {
    const { key } = await createKey();
    expectError(await call(t, 'GET', keysUrl(projectId), member.headers), 403, 'forbidden');
    expectError(await call(t, 'GET', keysUrl(projectId), stranger.headers), 404, 'not_found');
    expectError(await call(t, 'GET', keysUrl(projectId), {}), 401, 'unauthenticated');
    expectError(await call(t, 'GET', keysUrl(projectId), { 'x-ingest-key': key }), 401, 'unauthenticated');
  });
});

describe('submitting logs with an ingest key', () => {
  describe.each(presentations)('presented as %s', (_how, headers) => {
    it('stores a single entry in its project', async () => {
      const id = (await createProject(t, owner)).id;
      const { key } = await createKey(t, owner, id);
      const response = await postLog(t, id, headers(key), {
        level: 'error',
        message: 'deploy failed',
        source: 'ci',
        context: { job: 'deploy', attempt: 2 },
      });
      expect(response.statusCode, response.body).toBe(201);
      const { data } = response.json() as { data: LogBody };
      expect(data).toMatchObject({ project_id: id, level: 'error', message: 'deploy failed', source: 'ci' });
      expect(data.context).toEqual({ job: 'deploy', attempt: 2 });

      const read = await call(t, 'GET', `/api/logs/${data.id}`, owner.headers);
      expect(read.statusCode, read.body).toBe(200);
      expect((read.json() as { data: LogBody }).data).toMatchObject({ id: data.id, message: 'deploy failed' });
    });

    it('stores a batch in its project, validated whole', async () => {
      const id = (await createProject(t, owner)).id;
      const { key } = await createKey(t, owner, id);
      const response = await postBatch(t, id, headers(key), [
        { level: 'info', message: 'step 1' },
        { level: 'warning', message: 'step 2' },
        { level: 'debug', message: 'step 3' },
      ]);
      expect(response.statusCode, response.body).toBe(201);
      expect((response.json() as { data: { accepted: number } }).data.accepted).toBe(3);

      const list = await call(t, 'GET', `/api/projects/${id}/logs`, owner.headers);
      expect((list.json() as { data: LogBody[] }).data.map((l) => l.message).sort()).toEqual(['step 1', 'step 2', 'step 3']);

      const bad = await postBatch(t, id, headers(key), [
        { level: 'info', message: 'fine' },
        { level: 'loud', message: 'bad level' },
      ]);
      const error = expectError(bad, 422, 'validation_error');
      expect(Object.keys(error.errors ?? {})).toEqual(['logs.1.level']);
      expect(await countLogs(id)).toBe(3);
    });

    it("answers 404 on another project's submission routes, and writes nothing there", async () => {
      const { key } = await createKey();
      const before = await countLogs(otherProjectId);
      expectError(await postLog(t, otherProjectId, headers(key)), 404, 'not_found');
      expectError(await postBatch(t, otherProjectId, headers(key), [{ level: 'info', message: 'x' }]), 404, 'not_found');
      expectError(await postLog(t, 2_147_483_647, headers(key)), 404, 'not_found');
      expect(await countLogs(otherProjectId)).toBe(before);
    });

    it('is refused (401) on every route but the two submission routes', async () => {
      const { key } = await createKey();
      const [log] = await createLogs(t, projectId, [{ message: 'private' }]);
      if (!log) throw new Error('no log');
      const routes: [Method, string, object?][] = [
        ['GET', `/api/projects/${projectId}/logs`],
        ['GET', `/api/logs/${log.id}`],
        ['GET', '/api/projects'],
        ['POST', '/api/projects', { name: 'made by a key' }],
        ['GET', `/api/projects/${projectId}`],
        ['PUT', `/api/projects/${projectId}`, { name: 'renamed by a key' }],
        ['DELETE', `/api/projects/${projectId}`],
        ['GET', `/api/projects/${projectId}/stats`],
        ['GET', `/api/projects/${projectId}/config`],
        ['PUT', `/api/projects/${projectId}/config`, { retention_days: 1 }],
        ['GET', `/api/projects/${projectId}/members`],
        ['GET', '/api/user'],
      ];
      for (const [method, url, payload] of routes) {
        const response = await call(t, method, url, headers(key), payload);
        expect(response.statusCode, `${method} ${url}: ${response.body}`).toBe(401);
        expect((response.json() as { error: string }).error).toBe('unauthenticated');
      }
      // Nothing changed behind the refusals.
      const project = await call(t, 'GET', `/api/projects/${projectId}`, owner.headers);
      expect(project.statusCode).toBe(200);
      expect((project.json() as { data: { name: string } }).data.name).not.toBe('renamed by a key');
    });

    it('answers 401 for an unknown key, and writes nothing', async () => {
      const before = await countLogs(projectId);
      const unknown = `ltk_${'A'.repeat(43)}`;
      expectError(await postLog(t, projectId, headers(unknown)), 401, 'unauthenticated');
      expectError(await postBatch(t, projectId, headers(unknown), [{ level: 'info', message: 'x' }]), 401, 'unauthenticated');
      expect(await countLogs(projectId)).toBe(before);
    });

    it('answers 401 at once after the key is revoked', async () => {
      const created = await createKey();
      expect((await postLog(t, projectId, headers(created.key))).statusCode).toBe(201);
      const revoked = await call(t, 'DELETE', `${keysUrl(projectId)}/${created.id}`, owner.headers);
      expect(revoked.statusCode, revoked.body).toBe(200);
      const before = await countLogs(projectId);
      expectError(await postLog(t, projectId, headers(created.key)), 401, 'unauthenticated');
      expectError(await postBatch(t, projectId, headers(created.key), [{ level: 'info', message: 'x' }]), 401, 'unauthenticated');
      expect(await countLogs(projectId)).toBe(before);
    });
  });

  it('answers 401 when X-Ingest-Key is a user token rather than a key', async () => {
    const response = await postLog(t, projectId, { 'x-ingest-key': owner.token });
    expectError(response, 401, 'unauthenticated');
  });

  it('still lets members and owners submit with their own token', async () => {
    expect((await postLog(t, projectId, member.headers)).statusCode).toBe(201);
    expect((await postLog(t, projectId, owner.headers)).statusCode).toBe(201);
    expectError(await postLog(t, projectId, stranger.headers), 404, 'not_found');
    expectError(await postLog(t, projectId, {}), 401, 'unauthenticated');
  });

  it('sets last_used_at on first use', async () => {
    const created = await createKey();
    expect(created.last_used_at).toBeNull();
    const before = Date.now();
    expect((await postLog(t, projectId, { 'x-ingest-key': created.key })).statusCode).toBe(201);
    const after = Date.now();
    const { keys } = await listKeys();
    const listed = keys.find((k) => k.id === created.id);
    expect(listed?.last_used_at).not.toBeNull();
    const used = Date.parse(listed?.last_used_at ?? '');
    expect(used).toBeGreaterThanOrEqual(before - 1000);
    expect(used).toBeLessThanOrEqual(after + 1000);
  });

  it('stops working when its project is deleted', async () => {
    const id = (await createProject(t, owner)).id;
    const { key } = await createKey(t, owner, id);
    expect((await call(t, 'DELETE', `/api/projects/${id}`, owner.headers)).statusCode).toBe(200);
    expectError(await postLog(t, id, { 'x-ingest-key': key }), 401, 'unauthenticated');
  });
});

describe('DELETE /api/projects/{project_id}/ingest-keys/{key_id}', () => {
  it('revokes a key for the owner and keeps it listed as revoked; revoking again keeps the first time', async () => {
    const created = await createKey();
    const response = await call(t, 'DELETE', `${keysUrl(projectId)}/${created.id}`, owner.headers);
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json() as { data: KeyBody; message: string };
    expect(typeof body.message).toBe('string');
    expect(body.data).toMatchObject({ id: created.id, prefix: created.prefix });
    expect(body.data.revoked_at).not.toBeNull();
    expect(response.body).not.toContain(created.key);

    const { keys } = await listKeys();
    expect(keys.find((k) => k.id === created.id)?.revoked_at).toBe(body.data.revoked_at);

    const again = await call(t, 'DELETE', `${keysUrl(projectId)}/${created.id}`, owner.headers);
    expect(again.statusCode, again.body).toBe(200);
    expect((again.json() as { data: KeyBody }).data.revoked_at).toBe(body.data.revoked_at);
  });

  it('answers 403 to a member, 404 to a stranger, 401 without a token; the key keeps working', async () => {
    const created = await createKey();
    const url = `${keysUrl(projectId)}/${created.id}`;
    expectError(await call(t, 'DELETE', url, member.headers), 403, 'forbidden');
    expectError(await call(t, 'DELETE', url, stranger.headers), 404, 'not_found');
    expectError(await call(t, 'DELETE', url, {}), 401, 'unauthenticated');
    expectError(await call(t, 'DELETE', url, { 'x-ingest-key': created.key }), 401, 'unauthenticated');
    expect((await postLog(t, projectId, { 'x-ingest-key': created.key })).statusCode).toBe(201);
  });

  it("answers 404 for an unknown key or another project's key, and revokes nothing", async () => {
    const foreign = await createKey(t, owner, otherProjectId);
    expectError(await call(t, 'DELETE', `${keysUrl(projectId)}/${foreign.id}`, owner.headers), 404, 'not_found');
    expectError(await call(t, 'DELETE', `${keysUrl(projectId)}/2147483647`, owner.headers), 404, 'not_found');
    expect((await postLog(t, otherProjectId, { 'x-ingest-key': foreign.key })).statusCode).toBe(201);
  });

  it('answers 422 for bad ids', async () => {
    for (const bad of ['abc', '0', '-1', '1.5', '99999999999']) {
      expectError(await call(t, 'DELETE', `${keysUrl(projectId)}/${bad}`, owner.headers), 422, 'validation_error');
      expectError(await call(t, 'DELETE', `${keysUrl(bad)}/1`, owner.headers), 422, 'validation_error');
    }
  });
});

describe('rate limits of ingest keys', () => {
  let rl: TestApp;
  beforeAll(async () => {
    rl = await buildTestApp({ RATE_LIMIT_INGEST: '3', RATE_LIMIT_PUBLIC: '1000', RATE_LIMIT_AUTHENTICATED: '1000' });
  });
  afterAll(() => rl.close());

  it('gives each key a budget of its own, apart from the users', async () => {
    const boss = await createUser(rl);
    const id = (await createProject(rl, boss)).id;
    const a = await createKey(rl, boss, id, 'a');
    const b = await createKey(rl, boss, id, 'b');

    // A key's first request is counted on the caller's IP budget: until the key has been verified,
    // a made-up key must not open a fresh budget. Verified, it has a budget of its own.
    expect((await postLog(rl, id, { 'x-ingest-key': a.key })).statusCode).toBe(201);
    expect((await postLog(rl, id, { 'x-ingest-key': b.key })).statusCode).toBe(201);

    // The budget follows the key, whichever header carries it.
    const spent = [
      await postLog(rl, id, { 'x-ingest-key': a.key }),
      await postLog(rl, id, { authorization: `Bearer ${a.key}` }),
      await postBatch(rl, id, { 'x-ingest-key': a.key }, [{ level: 'info', message: 'batched' }]),
    ];
    expect(spent.map((r) => r.statusCode)).toEqual([201, 201, 201]);

    const limited = await postLog(rl, id, { 'x-ingest-key': a.key });
    expectError(limited, 429, 'rate_limited');
    const retryAfter = Number(limited.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expectError(await postLog(rl, id, { authorization: `Bearer ${a.key}` }), 429, 'rate_limited');

    expect((await postLog(rl, id, { 'x-ingest-key': b.key })).statusCode).toBe(201);
    expect((await postLog(rl, id, boss.headers)).statusCode).toBe(201);
    const read = await call(rl, 'GET', `/api/projects/${id}/logs`, boss.headers);
    expect(read.statusCode).toBe(200);
    expect((read.json() as { meta: { total: number } }).meta.total).toBe(7);
  });

  it('keeps made-up keys on the caller\'s IP budget, however many there are', async () => {
    const tightIp = await buildTestApp({ RATE_LIMIT_INGEST: '1000', RATE_LIMIT_PUBLIC: '2', RATE_LIMIT_AUTHENTICATED: '1000' });
    try {
      const boss = await createUser(tightIp);
      const id = (await createProject(tightIp, boss)).id;
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        statuses.push((await postLog(tightIp, id, { 'x-ingest-key': `ltk_${String(i).padStart(43, 'z')}` })).statusCode);
      }
      expect(statuses).toEqual([401, 401, 429, 429]);
    } finally {
      await tightIp.close();
    }
  });
});

describe('rate limits of requests that merely carry an ingest-key header', () => {
  // The ingest tier is for the routes that take ingest keys. Elsewhere the header means nothing, and
  // must not hand the caller a fresh budget: otherwise a new random `X-Ingest-Key` per request
  // escapes every per-user and per-IP limit.
  let tight: TestApp;
  beforeAll(async () => {
    tight = await buildTestApp({ RATE_LIMIT_INGEST: '1000', RATE_LIMIT_PUBLIC: '2', RATE_LIMIT_AUTHENTICATED: '2' });
  });
  afterAll(() => tight.close());

  const randomKey = (i: number) => `ltk_${i.toString().padStart(43, 'r')}`;

  it("keeps a signed-in user on their own budget on a route that takes no ingest key", async () => {
    const user = await createUser(tight);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const response = await call(tight, 'GET', '/api/projects', { ...user.headers, 'x-ingest-key': randomKey(i) });
      statuses.push(response.statusCode);
    }
    expect(statuses).toEqual([200, 200, 429, 429]);
  });

  it('keeps an anonymous caller on the per-IP budget on a route that takes no ingest key', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const response = await call(tight, 'GET', '/api/user', { 'x-ingest-key': randomKey(100 + i) });
      statuses.push(response.statusCode);
    }
    expect(statuses).toEqual([401, 401, 429, 429]);
  });
});
