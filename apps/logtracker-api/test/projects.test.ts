import { arrayLiteral, queryRows, withTransaction } from '@repo/db';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logs, projectMembers, projects } from '../src/db/schema/index.js';
import { logCounts } from '../src/modules/projects/projects.repository.js';
import {
  addMember,
  buildTestApp,
  createLogs,
  createProject,
  createUser,
  expectError,
  type TestApp,
  type TestUser,
} from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(() => t.close());

const PROJECT_KEYS = ['created_at', 'description', 'id', 'log_count', 'name', 'repository_url', 'role', 'updated_at'];

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';
const call = (user: TestUser | undefined, method: Method, url: string, payload?: object) =>
  t.app.inject({ method, url, payload, headers: user ? user.headers : {} });

async function projectRow(id: number) {
  const [row] = await t.database.db.select().from(projects).where(eq(projects.id, id));
  return row;
}

describe('POST /api/projects', () => {
  it('creates the project with the caller as owner and answers 201', async () => {
    const owner = await createUser(t);
    const response = await call(owner, 'POST', '/api/projects', {
      name: 'Checkout service',
      description: 'Payments and carts',
      repository_url: 'https://github.com/acme/checkout',
    });
    expect(response.statusCode, response.body).toBe(201);
    const { data } = response.json();
    expect(Object.keys(data).sort()).toEqual(PROJECT_KEYS);
    expect(data).toMatchObject({
      name: 'Checkout service',
      description: 'Payments and carts',
      repository_url: 'https://github.com/acme/checkout',
      role: 'owner',
    });
    expect(Number.isInteger(data.id)).toBe(true);
    expect(new Date(data.created_at).toISOString()).toBe(data.created_at);

    const members = await t.database.db.select().from(projectMembers).where(eq(projectMembers.projectId, data.id));
    expect(members).toEqual([expect.objectContaining({ userId: owner.id, role: 'owner' })]);
    expect((await projectRow(data.id))?.createdBy).toBe(owner.id);

    const shown = await call(owner, 'GET', `/api/projects/${data.id}`);
    expect(shown.statusCode).toBe(200);
    expect(shown.json().data).toEqual(data);
  });

  it('accepts a name alone, leaving description and repository_url null', async () => {
    const owner = await createUser(t);
    const response = await call(owner, 'POST', '/api/projects', { name: 'Minimal' });
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json().data).toMatchObject({ name: 'Minimal', description: null, repository_url: null, role: 'owner' });
  });

  it.each([
    ['name', 'missing', { description: 'no name' }],
    ['name', 'blank', { name: '   ' }],
    ['name', 'not a string', { name: 42 }],
    ['repository_url', 'not a URL', { name: 'P', repository_url: 'not a url' }],
    ['repository_url', 'not http(s)', { name: 'P', repository_url: 'javascript:alert(1)' }],
    ['repository_url', 'an ftp URL', { name: 'P', repository_url: 'ftp://example.com/repo' }],
  ])('answers 422 keyed by %s when it is %s', async (field, _why, payload) => {
    const owner = await createUser(t);
    const error = expectError(await call(owner, 'POST', '/api/projects', payload), 422, 'validation_error');
    expect(Object.keys(error.errors ?? {})).toEqual([field]);
    const mine = await t.database.db.select().from(projectMembers).where(eq(projectMembers.userId, owner.id));
    expect(mine).toHaveLength(0);
  });

  it('answers 400 bad_request for malformed JSON', async () => {
    const owner = await createUser(t);
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/projects',
      headers: { ...owner.headers, 'content-type': 'application/json' },
      payload: '{"name":',
    });
    expectError(response, 400, 'bad_request');
  });

  it('ignores unknown body fields and never writes them', async () => {
    const owner = await createUser(t);
    const other = await createUser(t);
    const response = await call(owner, 'POST', '/api/projects', {
      name: 'Mass assignment',
      id: 987_654,
      role: 'member',
      created_by: other.id,
      createdBy: other.id,
      retention_days: 7,
      retentionDays: 7,
      alert_levels: ['debug'],
      created_at: '2000-01-01T00:00:00.000Z',
    });
    expect(response.statusCode, response.body).toBe(201);
    const { data } = response.json();
    expect(data.id).not.toBe(987_654);
    expect(data.role).toBe('owner');
    expect(data.created_at).not.toBe('2000-01-01T00:00:00.000Z');
    const row = await projectRow(data.id);
    expect(row).toMatchObject({ createdBy: owner.id, retentionDays: 30, alertLevels: ['error'] });
    expect(await projectRow(987_654)).toBeUndefined();
    const members = await t.database.db.select().from(projectMembers).where(eq(projectMembers.projectId, data.id));
    expect(members).toEqual([expect.objectContaining({ userId: owner.id, role: 'owner' })]);
  });
});

describe('GET /api/projects', () => {
  it("lists only the caller's projects, member projects included with role 'member'", async () => {
    const alice = await createUser(t);
    const bob = await createUser(t);
    const own = await createProject(t, alice, { name: 'Alice own' });
    const shared = await createProject(t, bob, { name: 'Bob shared' });
    const hidden = await createProject(t, bob, { name: 'Bob hidden' });
    await addMember(t, shared.id, alice);

    const response = await call(alice, 'GET', '/api/projects');
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    const byId = new Map<number, { role: string; name: string }>(
      body.data.map((p: { id: number; role: string; name: string }) => [p.id, p]),
    );
    expect([...byId.keys()].sort((a, b) => a - b)).toEqual([own.id, shared.id].sort((a, b) => a - b));
    expect(byId.get(own.id)).toMatchObject({ role: 'owner', name: 'Alice own' });
    expect(byId.get(shared.id)).toMatchObject({ role: 'member', name: 'Bob shared' });
    expect(byId.has(hidden.id)).toBe(false);
    expect(body.meta).toEqual({ current_page: 1, per_page: 50, total: 2, last_page: 1 });

    const bobs = (await call(bob, 'GET', '/api/projects')).json();
    expect(bobs.data.map((p: { id: number }) => p.id).sort()).toEqual([shared.id, hidden.id].sort());
    expect(bobs.data.every((p: { role: string }) => p.role === 'owner')).toBe(true);
  });

  it('answers an empty page for a user with no projects', async () => {
    const loner = await createUser(t);
    const response = await call(loner, 'GET', '/api/projects');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ data: [], meta: { current_page: 1, total: 0, last_page: 1 } });
  });

  it('paginates with current_page, per_page, total and last_page', async () => {
    const owner = await createUser(t);
    const created = [];
    for (let i = 0; i < 5; i++) created.push(await createProject(t, owner, { name: `Paged ${i}` }));

    const seen: number[] = [];
    for (const page of [1, 2, 3]) {
      const response = await call(owner, 'GET', `/api/projects?page=${page}&per_page=2`);
      expect(response.statusCode, response.body).toBe(200);
      const body = response.json();
      expect(body.meta).toEqual({ current_page: page, per_page: 2, total: 5, last_page: 3 });
      expect(body.data).toHaveLength(page === 3 ? 1 : 2);
      seen.push(...body.data.map((p: { id: number }) => p.id));
    }
    // Every project exactly once across the pages, newest first.
    expect(seen).toEqual(created.map((p) => p.id).reverse());

    const beyond = await call(owner, 'GET', '/api/projects?page=4&per_page=2');
    expect(beyond.statusCode).toBe(200);
    expect(beyond.json()).toMatchObject({ data: [], meta: { current_page: 4, per_page: 2, total: 5, last_page: 3 } });
  });

  it.each([
    ['per_page', 'per_page=101'],
    ['per_page', 'per_page=0'],
    ['per_page', 'per_page=abc'],
    ['page', 'page=0'],
    ['page', 'page=-1'],
    ['page', 'page=1.5'],
  ])('answers 422 keyed by %s for %s', async (field, query) => {
    const user = await createUser(t);
    const error = expectError(await call(user, 'GET', `/api/projects?${query}`), 422, 'validation_error');
    expect(Object.keys(error.errors ?? {})).toEqual([field]);
  });

  it('accepts per_page=100', async () => {
    const user = await createUser(t);
    const response = await call(user, 'GET', '/api/projects?per_page=100');
    expect(response.statusCode).toBe(200);
    expect(response.json().meta.per_page).toBe(100);
  });
});

describe('log_count on projects', () => {
  it('counts the logs each project holds, in the list and for one project, and follows deletions', async () => {
    const owner = await createUser(t);
    const busy = await createProject(t, owner);
    const quiet = await createProject(t, owner);
    const now = Date.now();
    // Across days and levels, in two statements (each appends its own rollup rows).
    await createLogs(t, busy.id, [
      { level: 'error', timestamp: new Date(now - 3 * 86_400_000) },
      { level: 'info' },
      { level: 'debug', timestamp: new Date(now - 86_400_000) },
    ]);
    await createLogs(t, busy.id, [{ level: 'warning' }, { level: 'info', message: 'to delete' }]);

    const listed = (await call(owner, 'GET', '/api/projects')).json() as { data: { id: number; log_count: number }[] };
    expect(Object.fromEntries(listed.data.map((p) => [p.id, p.log_count]))).toEqual({ [busy.id]: 5, [quiet.id]: 0 });
    expect((await call(owner, 'GET', `/api/projects/${busy.id}`)).json().data.log_count).toBe(5);

    await t.database.db.delete(logs).where(eq(logs.message, 'to delete'));
    expect((await call(owner, 'GET', `/api/projects/${busy.id}`)).json().data.log_count).toBe(4);
    const updated = await call(owner, 'PUT', `/api/projects/${busy.id}`, { name: 'Renamed' });
    expect(updated.json().data).toMatchObject({ name: 'Renamed', log_count: 4 });
    expect((await call(owner, 'GET', `/api/projects/${quiet.id}`)).json().data.log_count).toBe(0);

    const created = await call(owner, 'POST', '/api/projects', { name: 'New' });
    expect(created.json().data.log_count).toBe(0);
  });
});

describe('log_count, as a list grows its rollups', () => {
  // The main pool plans each statement once for every value (genericPlans, postgres.js only): the
  // plan must read the day buckets of the listed projects, not every bucket of them, when they
  // are all the projects there are (one team's deployment) and their minutes and hours are most of
  // the rollups.
  it.runIf(process.env.TEST_DATABASE_URL)('reads the day buckets of the listed projects, planned once for every list', async () => {
    const owner = await createUser(t);
    const ids = [(await createProject(t, owner)).id, (await createProject(t, owner)).id, (await createProject(t, owner)).id];
    const db = t.database.db;
    await db.execute(sql`
      insert into log_level_counts (project_id, grain, bucket, level, count, compacted)
      select p, g.grain, date_trunc(g.grain, now() - g.step * i), l, 1, true
        from unnest(${arrayLiteral(ids)}::int[]) p,
             (values ('minute', interval '1 minute', 4320), ('hour', interval '1 hour', 720), ('day', interval '1 day', 30)) g(grain, step, n),
             generate_series(0, g.n - 1) i,
             unnest(array['debug', 'info', 'warning', 'error']) l`);
    await db.execute(sql`vacuum analyze log_level_counts`);

    const plan = await withTransaction(db, async (tx) => {
      expect(await logCounts(tx, ids)).toEqual(new Map(ids.map((id) => [id, 120])));
      // The statement as postgres.js prepared it on this connection, explained with the same ids.
      const [prepared] = await queryRows<{ name: string }>(
        tx,
        sql`select name from pg_prepared_statements
             where statement like '%sum(%' and statement like '%log_level_counts%' and not from_sql`,
      );
      if (!prepared) throw new Error('the log counts were not prepared');
      return queryRows(tx, sql.raw(`explain (format json) execute ${prepared.name}('${arrayLiteral(ids)}')`));
    });
    const text = JSON.stringify(plan);
    expect(text).toContain('log_level_counts_idx');
    expect(text).not.toContain('Seq Scan');
  });
});

describe('GET /api/projects/{id}', () => {
  it("shows a project to its owner and to a member with the caller's role", async () => {
    const owner = await createUser(t);
    const member = await createUser(t);
    const project = await createProject(t, owner, { name: 'Shown', description: 'Visible' });
    await addMember(t, project.id, member);

    const asOwner = await call(owner, 'GET', `/api/projects/${project.id}`);
    expect(asOwner.statusCode).toBe(200);
    expect(asOwner.json().data).toMatchObject({ id: project.id, name: 'Shown', description: 'Visible', role: 'owner' });

    const asMember = await call(member, 'GET', `/api/projects/${project.id}`);
    expect(asMember.statusCode).toBe(200);
    expect(asMember.json().data).toMatchObject({ id: project.id, role: 'member' });
  });

  it("answers 404 not_found for another user's project, the same as for a missing one", async () => {
    const owner = await createUser(t);
    const stranger = await createUser(t);
    const project = await createProject(t, owner);
    const foreign = expectError(await call(stranger, 'GET', `/api/projects/${project.id}`), 404, 'not_found');
    const missing = expectError(await call(stranger, 'GET', '/api/projects/2147483647'), 404, 'not_found');
    expect(foreign).toEqual(missing);
  });

  // '1e3' and '0x10' are not decimal integers: they must not alias projects 1000 and 16.
  it.each(['abc', '0', '-1', '1.5', '99999999999', '1e3', '0x10'])('answers 422 (never 500) for the id %s', async (id) => {
    const user = await createUser(t);
    const error = expectError(await call(user, 'GET', `/api/projects/${id}`), 422, 'validation_error');
    expect(Object.keys(error.errors ?? {})).toEqual(['id']);
  });
});

describe('PUT /api/projects/{id}', () => {
  it('lets the owner update and answers 200 with the project', async () => {
    const owner = await createUser(t);
    const project = await createProject(t, owner, { name: 'Before', description: 'Old' });
    const response = await call(owner, 'PUT', `/api/projects/${project.id}`, {
      name: 'After',
      repository_url: 'http://git.example.com/after',
    });
    expect(response.statusCode, response.body).toBe(200);
    const { data } = response.json();
    expect(data).toMatchObject({
      id: project.id,
      name: 'After',
      description: 'Old',
      repository_url: 'http://git.example.com/after',
      role: 'owner',
    });
    expect(new Date(data.updated_at).getTime()).toBeGreaterThanOrEqual(project.updatedAt.getTime());
    expect(await projectRow(project.id)).toMatchObject({ name: 'After', description: 'Old' });
  });

  it('clears description with null and leaves other fields as they were', async () => {
    const owner = await createUser(t);
    const project = await createProject(t, owner, { name: 'Keep me', description: 'Remove me' });
    const response = await call(owner, 'PUT', `/api/projects/${project.id}`, { description: null });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().data).toMatchObject({ name: 'Keep me', description: null });
  });

  it('ignores unknown fields and never writes them', async () => {
    const owner = await createUser(t);
    const project = await createProject(t, owner);
    const response = await call(owner, 'PUT', `/api/projects/${project.id}`, {
      name: 'Renamed',
      retention_days: 5,
      created_by: 999,
      id: 12345,
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().data.id).toBe(project.id);
    expect(await projectRow(project.id)).toMatchObject({ name: 'Renamed', retentionDays: 30, createdBy: owner.id });
  });

  it('answers 403 forbidden to a member and changes nothing', async () => {
    const owner = await createUser(t);
    const member = await createUser(t);
    const project = await createProject(t, owner, { name: 'Owned' });
    await addMember(t, project.id, member);
    expectError(await call(member, 'PUT', `/api/projects/${project.id}`, { name: 'Hijacked' }), 403, 'forbidden');
    expect((await projectRow(project.id))?.name).toBe('Owned');
  });

  it('answers 404 not_found to a stranger and changes nothing', async () => {
    const owner = await createUser(t);
    const stranger = await createUser(t);
    const project = await createProject(t, owner, { name: 'Owned' });
    expectError(await call(stranger, 'PUT', `/api/projects/${project.id}`, { name: 'Hijacked' }), 404, 'not_found');
    expect((await projectRow(project.id))?.name).toBe('Owned');
  });

  it.each([
    ['an empty body', {}],
    ['only unknown fields', { colour: 'blue' }],
    ['a blank name', { name: '' }],
    ['a bad repository_url', { repository_url: 'github.com/acme' }],
  ])('answers 422 for %s', async (_what, payload) => {
    const owner = await createUser(t);
    const project = await createProject(t, owner, { name: 'Unchanged' });
    expectError(await call(owner, 'PUT', `/api/projects/${project.id}`, payload), 422, 'validation_error');
    expect((await projectRow(project.id))?.name).toBe('Unchanged');
  });

  it('answers 422 for a non-numeric or out-of-range id', async () => {
    const owner = await createUser(t);
    expectError(await call(owner, 'PUT', '/api/projects/abc', { name: 'x' }), 422, 'validation_error');
    expectError(await call(owner, 'PUT', '/api/projects/99999999999', { name: 'x' }), 422, 'validation_error');
  });
});

describe('DELETE /api/projects/{id}', () => {
  it("lets the owner delete the project with its logs and members, answering 200 with a message", async () => {
    const owner = await createUser(t);
    const member = await createUser(t);
    const project = await createProject(t, owner);
    const kept = await createProject(t, owner);
    await addMember(t, project.id, member);
    await createLogs(t, project.id, [{ level: 'error' }, { level: 'info' }, { level: 'debug' }]);
    await createLogs(t, kept.id, [{ level: 'warning' }]);

    const response = await call(owner, 'DELETE', `/api/projects/${project.id}`);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().message).toEqual(expect.any(String));

    expect(await projectRow(project.id)).toBeUndefined();
    expect(await t.database.db.select().from(logs).where(eq(logs.projectId, project.id))).toHaveLength(0);
    expect(await t.database.db.select().from(projectMembers).where(eq(projectMembers.projectId, project.id))).toHaveLength(0);
    expect(await t.database.db.select().from(logs).where(eq(logs.projectId, kept.id))).toHaveLength(1);

    expectError(await call(owner, 'GET', `/api/projects/${project.id}`), 404, 'not_found');
    expectError(await call(member, 'GET', `/api/projects/${project.id}`), 404, 'not_found');
    expectError(await call(owner, 'DELETE', `/api/projects/${project.id}`), 404, 'not_found');
  });

  it('answers 403 forbidden to a member and deletes nothing', async () => {
    const owner = await createUser(t);
    const member = await createUser(t);
    const project = await createProject(t, owner);
    await addMember(t, project.id, member);
    await createLogs(t, project.id, [{ level: 'error' }]);
    expectError(await call(member, 'DELETE', `/api/projects/${project.id}`), 403, 'forbidden');
    expect(await projectRow(project.id)).toBeDefined();
    expect(await t.database.db.select().from(logs).where(eq(logs.projectId, project.id))).toHaveLength(1);
  });

  it('answers 404 not_found to a stranger and deletes nothing', async () => {
    const owner = await createUser(t);
    const stranger = await createUser(t);
    const project = await createProject(t, owner);
    expectError(await call(stranger, 'DELETE', `/api/projects/${project.id}`), 404, 'not_found');
    expect(await projectRow(project.id)).toBeDefined();
  });

  it('answers 422 for a non-numeric or out-of-range id', async () => {
    const owner = await createUser(t);
    expectError(await call(owner, 'DELETE', '/api/projects/abc'), 422, 'validation_error');
    expectError(await call(owner, 'DELETE', '/api/projects/99999999999'), 422, 'validation_error');
  });
});

describe('authentication on every project route', () => {
  it.each<[Method, string, object | undefined]>([
    ['GET', '/api/projects', undefined],
    ['POST', '/api/projects', { name: 'No token' }],
    ['GET', '/api/projects/1', undefined],
    ['PUT', '/api/projects/1', { name: 'No token' }],
    ['DELETE', '/api/projects/1', undefined],
  ])('%s %s answers 401 without a token', async (method, url, payload) => {
    expectError(await call(undefined, method, url, payload), 401, 'unauthenticated');
  });

  it('answers 401 with a revoked token and writes nothing', async () => {
    const owner = await createUser(t);
    const project = await createProject(t, owner, { name: 'Still here' });
    expect((await call(owner, 'POST', '/api/auth/logout')).statusCode).toBe(200);
    expectError(await call(owner, 'POST', '/api/projects', { name: 'After logout' }), 401, 'unauthenticated');
    expectError(await call(owner, 'PUT', `/api/projects/${project.id}`, { name: 'x' }), 401, 'unauthenticated');
    expectError(await call(owner, 'DELETE', `/api/projects/${project.id}`), 401, 'unauthenticated');
    expect((await projectRow(project.id))?.name).toBe('Still here');
    const mine = await t.database.db.select().from(projectMembers).where(eq(projectMembers.userId, owner.id));
    expect(mine).toHaveLength(1);
  });
});
