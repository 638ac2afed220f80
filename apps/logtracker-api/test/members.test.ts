import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectMembers, type ProjectRole } from '../src/db/schema/index.js';
import { addMember, buildTestApp, createLogs, createProject, createUser, expectError, type TestApp, type TestUser } from './helpers.js';

interface MemberBody {
  user_id: number;
  name: string;
  email: string;
  role: ProjectRole;
  added_at: string;
}

type Method = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE';

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(() => t.close());

const membersUrl = (projectId: number | string) => `/api/projects/${projectId}/members`;
const memberUrl = (projectId: number | string, userId: number | string) => `${membersUrl(projectId)}/${userId}`;

function call(user: TestUser | undefined, method: Method, url: string, payload?: object) {
  return t.app.inject({ method, url, payload, headers: user ? user.headers : {} });
}

const listMembers = (user: TestUser | undefined, projectId: number | string) => call(user, 'GET', membersUrl(projectId));
const addByEmail = (user: TestUser | undefined, projectId: number | string, payload: object) =>
  call(user, 'POST', membersUrl(projectId), payload);
const setRole = (user: TestUser | undefined, projectId: number | string, userId: number | string, payload: object) =>
  call(user, 'PUT', memberUrl(projectId, userId), payload);
const removeMember = (user: TestUser | undefined, projectId: number | string, userId: number | string) =>
  call(user, 'DELETE', memberUrl(projectId, userId));

/** The stored role of a user in a project, or undefined when they are not a member: proves what was written. */
async function storedRole(projectId: number, userId: number) {
  const [row] = await t.database.db
    .select({ role: projectMembers.role })
    .from(projectMembers)
    .where(and(eq(projectMembers.projectId, projectId), eq(projectMembers.userId, userId)));
  return row?.role;
}

/** A fresh project with an owner, a member and a stranger, so that no test depends on another's changes. */
async function team() {
  const owner = await createUser(t, { name: 'Olive Owner' });
  const member = await createUser(t, { name: 'Max Member' });
  const stranger = await createUser(t, { name: 'Sam Stranger' });
  const project = await createProject(t, owner);
  await addMember(t, project.id, member);
  return { owner, member, stranger, projectId: project.id };
}

describe('GET /api/projects/{project_id}/members', () => {
  it('lists the members with their roles, oldest first, to the owner and to a member alike', async () => {
    const { owner, member, projectId } = await team();
    const expected = [
      { user_id: owner.id, name: 'Olive Owner', email: owner.email, role: 'owner' },
      { user_id: member.id, name: 'Max Member', email: member.email, role: 'member' },
    ];
    for (const who of [owner, member]) {
      const response = await listMembers(who, projectId);
      expect(response.statusCode, response.body).toBe(200);
      const { data } = response.json() as { data: MemberBody[] };
      expect(data).toHaveLength(2);
      expect(data).toMatchObject(expected);
      for (const m of data) {
        expect(Object.keys(m).sort()).toEqual(['added_at', 'email', 'name', 'role', 'user_id']);
        expect(m.added_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
      }
    }
  });

  it('answers HEAD', async () => {
    const { owner, projectId } = await team();
    const response = await call(owner, 'HEAD', membersUrl(projectId));
    expect(response.statusCode).toBe(200);
    expect(response.body).toBe('');
  });

  it('answers 404 not_found to a stranger and for a project that does not exist', async () => {
    const { stranger, projectId } = await team();
    expectError(await listMembers(stranger, projectId), 404, 'not_found');
    expectError(await listMembers(stranger, 2_147_483_647), 404, 'not_found');
  });

  it('answers 401 without a token or with a bad one', async () => {
    const { projectId } = await team();
    expectError(await listMembers(undefined, projectId), 401, 'unauthenticated');
    const forged = await t.app.inject({
      method: 'GET',
      url: membersUrl(projectId),
      headers: { authorization: 'Bearer not.a.jwt' },
    });
    expectError(forged, 401, 'unauthenticated');
  });

  it('answers 422 for a bad project id', async () => {
    const { owner } = await team();
    for (const bad of ['abc', '0', '-1', '1.5', '99999999999']) {
      expectError(await listMembers(owner, bad), 422, 'validation_error');
    }
  });
});

describe('POST /api/projects/{project_id}/members', () => {
  describe('happy path', () => {
    it('adds an existing user by e-mail with the default role member', async () => {
      const { owner, projectId } = await team();
      const newcomer = await createUser(t, { name: 'Nina Newcomer' });
      const before = Date.now();
      const response = await addByEmail(owner, projectId, { email: newcomer.email });
      expect(response.statusCode, response.body).toBe(201);
      const body = response.json() as { data: MemberBody; message: string };
      expect(body.data).toEqual({
        user_id: newcomer.id,
        name: 'Nina Newcomer',
        email: newcomer.email,
        role: 'member',
        added_at: expect.stringMatching(/Z$/),
      });
      expect(Date.parse(body.data.added_at)).toBeGreaterThanOrEqual(before - 1000);
      expect(typeof body.message).toBe('string');
      expect(await storedRole(projectId, newcomer.id)).toBe('member');

      const list = (await listMembers(owner, projectId)).json() as { data: MemberBody[] };
      expect(list.data.map((m) => m.user_id)).toContain(newcomer.id);
    });

    it('adds a user as owner, who then has the powers of an owner', async () => {
      const { owner, projectId } = await team();
      const coOwner = await createUser(t);
      const response = await addByEmail(owner, projectId, { email: coOwner.email, role: 'owner' });
      expect(response.statusCode, response.body).toBe(201);
      expect((response.json() as { data: MemberBody }).data.role).toBe('owner');
      expect(await storedRole(projectId, coOwner.id)).toBe('owner');

      const renamed = await call(coOwner, 'PUT', `/api/projects/${projectId}`, { name: 'Renamed by the co-owner' });
      expect(renamed.statusCode, renamed.body).toBe(200);
    });

    it('matches the e-mail case-insensitively and ignores surrounding blanks', async () => {
      const { owner, projectId } = await team();
      const local = `casey-${Date.now().toString(36)}`;
      const casey = await createUser(t, { email: `${local}@example.test` });
      const response = await addByEmail(owner, projectId, { email: `  ${local.toUpperCase()}@Example.TEST ` });
      expect(response.statusCode, response.body).toBe(201);
      expect((response.json() as { data: MemberBody }).data).toMatchObject({ user_id: casey.id, email: casey.email });
    });

    it('ignores unknown body fields', async () => {
      const { owner, projectId } = await team();
      const newcomer = await createUser(t);
      const response = await addByEmail(owner, projectId, { email: newcomer.email, user_id: owner.id, project_id: 1 });
      expect(response.statusCode, response.body).toBe(201);
      expect((response.json() as { data: MemberBody }).data.user_id).toBe(newcomer.id);
    });
  });

  describe('what the added member may do', () => {
    it('sees the project, submits and reads logs, but may not change or delete the project or its config', async () => {
      const { owner, projectId } = await team();
      const joiner = await createUser(t);
      expect((await addByEmail(owner, projectId, { email: joiner.email })).statusCode).toBe(201);

      const projects = await call(joiner, 'GET', '/api/projects');
      expect(projects.statusCode, projects.body).toBe(200);
      const listed = (projects.json() as { data: { id: number; role: string }[] }).data;
      expect(listed).toEqual([expect.objectContaining({ id: projectId, role: 'member' })]);
      expect((await call(joiner, 'GET', `/api/projects/${projectId}`)).statusCode).toBe(200);

      const created = await call(joiner, 'POST', `/api/projects/${projectId}/logs`, {
        level: 'warning',
        message: 'written by the new member',
      });
      expect(created.statusCode, created.body).toBe(201);
      const logId = (created.json() as { data: { id: number } }).data.id;
      const batch = await call(joiner, 'POST', `/api/projects/${projectId}/logs/batch`, {
        logs: [{ level: 'info', message: 'batch one' }, { level: 'debug', message: 'batch two' }],
      });
      expect(batch.statusCode, batch.body).toBe(201);
      expect((batch.json() as { data: { accepted: number } }).data.accepted).toBe(2);

      const logs = await call(joiner, 'GET', `/api/projects/${projectId}/logs`);
      expect(logs.statusCode, logs.body).toBe(200);
      expect((logs.json() as { data: { message: string }[] }).data.map((l) => l.message).sort()).toEqual([
        'batch one',
        'batch two',
        'written by the new member',
      ]);
      expect((await call(joiner, 'GET', `/api/logs/${logId}`)).statusCode).toBe(200);
      expect((await call(joiner, 'GET', `/api/projects/${projectId}/config`)).statusCode).toBe(200);
      expect((await call(joiner, 'GET', `/api/projects/${projectId}/stats`)).statusCode).toBe(200);

      expectError(await call(joiner, 'PUT', `/api/projects/${projectId}`, { name: 'Hijacked' }), 403, 'forbidden');
      expectError(await call(joiner, 'DELETE', `/api/projects/${projectId}`), 403, 'forbidden');
      expectError(await call(joiner, 'PUT', `/api/projects/${projectId}/config`, { retention_days: 7 }), 403, 'forbidden');
      // The project is untouched.
      const project = await call(owner, 'GET', `/api/projects/${projectId}`);
      expect((project.json() as { data: { name: string } }).data.name).not.toBe('Hijacked');
      const config = await call(owner, 'GET', `/api/projects/${projectId}/config`);
      expect((config.json() as { data: { retention_days: number } }).data.retention_days).toBe(30);
    });
  });

  describe('errors', () => {
    it('answers 422 on email for an e-mail no user has, and adds no one', async () => {
      const { owner, projectId } = await team();
      const error = expectError(
        await addByEmail(owner, projectId, { email: 'nobody-here@example.test' }),
        422,
        'validation_error',
      );
      expect(Object.keys(error.errors ?? {})).toEqual(['email']);
      const list = (await listMembers(owner, projectId)).json() as { data: MemberBody[] };
      expect(list.data).toHaveLength(2);
    });

    it.each([
      ['a missing e-mail', {}, 'email'],
      ['a malformed e-mail', { email: 'not-an-email' }, 'email'],
      ['an e-mail of the wrong type', { email: 42 }, 'email'],
      ['an unknown role', { email: 'someone@example.test', role: 'admin' }, 'role'],
    ])('answers 422 keyed by the field for %s', async (_what, payload, field) => {
      const { owner, projectId } = await team();
      const error = expectError(await addByEmail(owner, projectId, payload), 422, 'validation_error');
      expect(error.errors?.[field]?.length).toBeGreaterThan(0);
    });

    it('answers 400 for malformed JSON', async () => {
      const { owner, projectId } = await team();
      const response = await t.app.inject({
        method: 'POST',
        url: membersUrl(projectId),
        headers: { ...owner.headers, 'content-type': 'application/json' },
        payload: '{"email":',
      });
      expectError(response, 400, 'bad_request');
    });

    it('answers 409 conflict for a user who is already a member, whatever the role asked', async () => {
      const { owner, member, projectId } = await team();
      expectError(await addByEmail(owner, projectId, { email: member.email }), 409, 'conflict');
      expectError(await addByEmail(owner, projectId, { email: member.email, role: 'owner' }), 409, 'conflict');
      expectError(await addByEmail(owner, projectId, { email: owner.email }), 409, 'conflict');
      expect(await storedRole(projectId, member.id)).toBe('member');
    });
  });

  describe('security', () => {
    it('answers 403 forbidden to a member who is not an owner, and adds no one', async () => {
      const { member, projectId } = await team();
      const newcomer = await createUser(t);
      expectError(await addByEmail(member, projectId, { email: newcomer.email }), 403, 'forbidden');
      expectError(await addByEmail(member, projectId, { email: newcomer.email, role: 'owner' }), 403, 'forbidden');
      expect(await storedRole(projectId, newcomer.id)).toBeUndefined();
    });

    it('answers 404 to a stranger (even adding themself) and 401 without a token', async () => {
      const { stranger, projectId } = await team();
      expectError(await addByEmail(stranger, projectId, { email: stranger.email }), 404, 'not_found');
      expect(await storedRole(projectId, stranger.id)).toBeUndefined();
      expectError(await addByEmail(undefined, projectId, { email: stranger.email }), 401, 'unauthenticated');
    });

    it('answers 404 for a project that does not exist and 422 for a bad project id', async () => {
      const { owner } = await team();
      expectError(await addByEmail(owner, 2_147_483_647, { email: owner.email }), 404, 'not_found');
      expectError(await addByEmail(owner, 'abc', { email: owner.email }), 422, 'validation_error');
    });
  });
});

describe('PUT /api/projects/{project_id}/members/{user_id}', () => {
  describe('happy path', () => {
    it('lets the owner promote a member, who then acts as owner', async () => {
      const { owner, member, projectId } = await team();
      const response = await setRole(owner, projectId, member.id, { role: 'owner' });
      expect(response.statusCode, response.body).toBe(200);
      const body = response.json() as { data: MemberBody; message: string };
      expect(body.data).toMatchObject({ user_id: member.id, email: member.email, role: 'owner' });
      expect(typeof body.message).toBe('string');
      expect(await storedRole(projectId, member.id)).toBe('owner');

      const config = await call(member, 'PUT', `/api/projects/${projectId}/config`, { retention_days: 14 });
      expect(config.statusCode, config.body).toBe(200);
    });

    it('lets the owner demote another owner, who then loses the owner powers', async () => {
      const { owner, member, projectId } = await team();
      expect((await setRole(owner, projectId, member.id, { role: 'owner' })).statusCode).toBe(200);
      const response = await setRole(owner, projectId, member.id, { role: 'member' });
      expect(response.statusCode, response.body).toBe(200);
      expect((response.json() as { data: MemberBody }).data.role).toBe('member');
      expect(await storedRole(projectId, member.id)).toBe('member');
      expectError(await call(member, 'PUT', `/api/projects/${projectId}`, { name: 'Nope' }), 403, 'forbidden');
    });

    it('with two owners, lets one step down; the one left may not', async () => {
      const { owner, member, projectId } = await team();
      expect((await setRole(owner, projectId, member.id, { role: 'owner' })).statusCode).toBe(200);

      const stepDown = await setRole(owner, projectId, owner.id, { role: 'member' });
      expect(stepDown.statusCode, stepDown.body).toBe(200);
      expect(await storedRole(projectId, owner.id)).toBe('member');

      expectError(await setRole(member, projectId, member.id, { role: 'member' }), 409, 'conflict');
      expect(await storedRole(projectId, member.id)).toBe('owner');
    });

    it('lets only one of two owners win when they demote each other at once: the project keeps an owner', async () => {
      const { owner, member, projectId } = await team();
      expect((await setRole(owner, projectId, member.id, { role: 'owner' })).statusCode).toBe(200);
      const [a, b] = await Promise.all([
        setRole(owner, projectId, member.id, { role: 'member' }),
        setRole(member, projectId, owner.id, { role: 'member' }),
      ]);
      const statuses = [a?.statusCode, b?.statusCode];
      expect(statuses.filter((s) => s === 200)).toHaveLength(1);
      expect(statuses.filter((s) => s === 409 || s === 403)).toHaveLength(1);
      const roles = [await storedRole(projectId, owner.id), await storedRole(projectId, member.id)];
      expect(roles.filter((r) => r === 'owner')).toHaveLength(1);
    });

    it('keeps an owner owner when asked to (no change, no conflict)', async () => {
      const { owner, projectId } = await team();
      const response = await setRole(owner, projectId, owner.id, { role: 'owner' });
      expect(response.statusCode, response.body).toBe(200);
      expect(await storedRole(projectId, owner.id)).toBe('owner');
    });
  });

  describe('errors', () => {
    it('answers 409 conflict when the last owner would be demoted', async () => {
      const { owner, projectId } = await team();
      const error = expectError(await setRole(owner, projectId, owner.id, { role: 'member' }), 409, 'conflict');
      expect(error.message).toMatch(/owner/i);
      expect(await storedRole(projectId, owner.id)).toBe('owner');
    });

    it('answers 404 not_found for a user who is not a member, or does not exist', async () => {
      const { owner, stranger, projectId } = await team();
      expectError(await setRole(owner, projectId, stranger.id, { role: 'owner' }), 404, 'not_found');
      expectError(await setRole(owner, projectId, 2_147_483_647, { role: 'member' }), 404, 'not_found');
      expect(await storedRole(projectId, stranger.id)).toBeUndefined();
    });

    it.each([
      ['no role', {}],
      ['an unknown role', { role: 'admin' }],
      ['a role of the wrong type', { role: 1 }],
    ])('answers 422 on role for %s', async (_what, payload) => {
      const { owner, member, projectId } = await team();
      const error = expectError(await setRole(owner, projectId, member.id, payload), 422, 'validation_error');
      expect(error.errors?.role?.length).toBeGreaterThan(0);
      expect(await storedRole(projectId, member.id)).toBe('member');
    });

    it('answers 422 for bad ids', async () => {
      const { owner, member, projectId } = await team();
      for (const bad of ['abc', '0', '-3', '2.5', '99999999999']) {
        expectError(await setRole(owner, projectId, bad, { role: 'owner' }), 422, 'validation_error');
        expectError(await setRole(owner, bad, member.id, { role: 'owner' }), 422, 'validation_error');
      }
      expect(await storedRole(projectId, member.id)).toBe('member');
    });
  });

  describe('security', () => {
    it('answers 403 to a member, even promoting themself', async () => {
      const { owner, member, projectId } = await team();
      expectError(await setRole(member, projectId, member.id, { role: 'owner' }), 403, 'forbidden');
      expectError(await setRole(member, projectId, owner.id, { role: 'member' }), 403, 'forbidden');
      expect(await storedRole(projectId, member.id)).toBe('member');
      expect(await storedRole(projectId, owner.id)).toBe('owner');
    });

    it('answers 404 to a stranger and 401 without a token', async () => {
      const { owner, member, stranger, projectId } = await team();
      expectError(await setRole(stranger, projectId, member.id, { role: 'owner' }), 404, 'not_found');
      expectError(await setRole(stranger, projectId, owner.id, { role: 'member' }), 404, 'not_found');
      expectError(await setRole(undefined, projectId, member.id, { role: 'owner' }), 401, 'unauthenticated');
      expect(await storedRole(projectId, member.id)).toBe('member');
    });
  });
});

describe('DELETE /api/projects/{project_id}/members/{user_id}', () => {
  describe('happy path', () => {
    it('lets the owner remove a member, who loses access at once', async () => {
      const { owner, member, projectId } = await team();
      const [log] = await createLogs(t, projectId, [{ message: 'seen before removal' }]);
      if (!log) throw new Error('no log');
      expect((await call(member, 'GET', `/api/logs/${log.id}`)).statusCode).toBe(200);

      const response = await removeMember(owner, projectId, member.id);
      expect(response.statusCode, response.body).toBe(200);
      expect(typeof (response.json() as { message: string }).message).toBe('string');
      expect(await storedRole(projectId, member.id)).toBeUndefined();

      expectError(await call(member, 'GET', `/api/projects/${projectId}`), 404, 'not_found');
      expectError(await listMembers(member, projectId), 404, 'not_found');
      expectError(await call(member, 'GET', `/api/projects/${projectId}/logs`), 404, 'not_found');
      expectError(await call(member, 'GET', `/api/logs/${log.id}`), 404, 'not_found');
      expectError(
        await call(member, 'POST', `/api/projects/${projectId}/logs`, { level: 'info', message: 'after removal' }),
        404,
        'not_found',
      );
      const projects = (await call(member, 'GET', '/api/projects')).json() as { data: { id: number }[] };
      expect(projects.data.map((p) => p.id)).not.toContain(projectId);

      const list = (await listMembers(owner, projectId)).json() as { data: MemberBody[] };
      expect(list.data.map((m) => m.user_id)).toEqual([owner.id]);
    });

    it('lets a member leave a project on their own', async () => {
      const { owner, member, projectId } = await team();
      const response = await removeMember(member, projectId, member.id);
      expect(response.statusCode, response.body).toBe(200);
      expect(await storedRole(projectId, member.id)).toBeUndefined();
      expectError(await call(member, 'GET', `/api/projects/${projectId}`), 404, 'not_found');
      expect(await storedRole(projectId, owner.id)).toBe('owner');
    });

    it('with two owners, lets one leave or be removed, but never the last one', async () => {
      const { owner, member, projectId } = await team();
      const third = await createUser(t);
      expect((await addByEmail(owner, projectId, { email: third.email, role: 'owner' })).statusCode).toBe(201);
      expect((await setRole(owner, projectId, member.id, { role: 'owner' })).statusCode).toBe(200);

      // Three owners: one removes another, then one leaves; the last one stays.
      expect((await removeMember(owner, projectId, third.id)).statusCode).toBe(200);
      const leave = await removeMember(owner, projectId, owner.id);
      expect(leave.statusCode, leave.body).toBe(200);
      expect(await storedRole(projectId, owner.id)).toBeUndefined();

      expectError(await removeMember(member, projectId, member.id), 409, 'conflict');
      expect(await storedRole(projectId, member.id)).toBe('owner');
    });

    it('lets a removed user be added again', async () => {
      const { owner, member, projectId } = await team();
      expect((await removeMember(owner, projectId, member.id)).statusCode).toBe(200);
      const again = await addByEmail(owner, projectId, { email: member.email });
      expect(again.statusCode, again.body).toBe(201);
      expect((await call(member, 'GET', `/api/projects/${projectId}`)).statusCode).toBe(200);
    });
  });

  describe('errors', () => {
    it('answers 409 conflict when the last owner would leave, and keeps them', async () => {
      const { owner, projectId } = await team();
      expectError(await removeMember(owner, projectId, owner.id), 409, 'conflict');
      expect(await storedRole(projectId, owner.id)).toBe('owner');
      expect((await call(owner, 'GET', `/api/projects/${projectId}`)).statusCode).toBe(200);
    });

    it('answers 404 not_found for a user who is not a member, or does not exist', async () => {
      const { owner, stranger, projectId } = await team();
      expectError(await removeMember(owner, projectId, stranger.id), 404, 'not_found');
      expectError(await removeMember(owner, projectId, 2_147_483_647), 404, 'not_found');
    });

    it('answers 422 for bad ids', async () => {
      const { owner, member, projectId } = await team();
      for (const bad of ['abc', '0', '-3', '2.5', '99999999999']) {
        expectError(await removeMember(owner, projectId, bad), 422, 'validation_error');
        expectError(await removeMember(owner, bad, member.id), 422, 'validation_error');
      }
      expect(await storedRole(projectId, member.id)).toBe('member');
    });
  });

  describe('security', () => {
    it('answers 403 to a member removing someone else, owner or member', async () => {
      const { owner, member, projectId } = await team();
      const other = await createUser(t);
      await addMember(t, projectId, other);
      expectError(await removeMember(member, projectId, other.id), 403, 'forbidden');
      expectError(await removeMember(member, projectId, owner.id), 403, 'forbidden');
      expect(await storedRole(projectId, other.id)).toBe('member');
      expect(await storedRole(projectId, owner.id)).toBe('owner');
    });

    it('answers 404 to a stranger (removing anyone, or themself) and 401 without a token', async () => {
      const { owner, member, stranger, projectId } = await team();
      expectError(await removeMember(stranger, projectId, member.id), 404, 'not_found');
      expectError(await removeMember(stranger, projectId, stranger.id), 404, 'not_found');
      expectError(await removeMember(undefined, projectId, member.id), 401, 'unauthenticated');
      expect(await storedRole(projectId, member.id)).toBe('member');
      expect(await storedRole(projectId, owner.id)).toBe('owner');
    });
  });
});
