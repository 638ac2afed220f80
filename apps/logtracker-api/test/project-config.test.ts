import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projects } from '../src/db/schema/index.js';
import { addMember, buildTestApp, createProject, createUser, expectError, type TestApp, type TestUser } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(() => t.close());

const DEFAULTS = {
  retention_days: 30,
  alert_levels: ['error'],
  notification_settings: {
    enabled: false,
    webhook_url: null,
    email_recipients: [],
    threshold: { count: 1, window_minutes: 5 },
    quiet_period_minutes: 15,
  },
};

const url = (projectId: number | string) => `/api/projects/${projectId}/config`;
const getConfig = (user: TestUser | undefined, projectId: number | string) =>
  t.app.inject({ method: 'GET', url: url(projectId), headers: user ? user.headers : {} });
const putConfig = (user: TestUser | undefined, projectId: number | string, payload: unknown) =>
  t.app.inject({ method: 'PUT', url: url(projectId), headers: user ? user.headers : {}, payload: payload as object });

async function storedProject(id: number) {
  const [row] = await t.database.db.select().from(projects).where(eq(projects.id, id));
  if (!row) throw new Error(`no project ${id}`);
  return row;
}

/** A fresh owner and project, so that no test depends on another's changes. */
async function ownedProject() {
  const owner = await createUser(t);
  const project = await createProject(t, owner);
  return { owner, project };
}

describe('GET /api/projects/{project_id}/config', () => {
  it('answers the defaults for a new project', async () => {
    const { owner, project } = await ownedProject();
    const response = await getConfig(owner, project.id);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().data).toEqual({ project_id: project.id, ...DEFAULTS });
  });

  it('answers the defaults for a project created through the API', async () => {
    const owner = await createUser(t);
    const created = await t.app.inject({ method: 'POST', url: '/api/projects', headers: owner.headers, payload: { name: 'Via API' } });
    expect(created.statusCode).toBe(201);
    const id = created.json().data.id as number;
    expect((await getConfig(owner, id)).json().data).toEqual({ project_id: id, ...DEFAULTS });
  });

  it('lets a member read the configuration', async () => {
    const { owner, project } = await ownedProject();
    const member = await createUser(t);
    await addMember(t, project.id, member);
    expect((await putConfig(owner, project.id, { retention_days: 90 })).statusCode).toBe(200);
    const response = await getConfig(member, project.id);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().data).toMatchObject({ project_id: project.id, retention_days: 90 });
  });

  it('answers 404 not_found to a stranger', async () => {
    const { project } = await ownedProject();
    const stranger = await createUser(t);
    expectError(await getConfig(stranger, project.id), 404, 'not_found');
  });

  it('answers 404 for a project that does not exist and 422 for a bad id', async () => {
    const user = await createUser(t);
    expectError(await getConfig(user, 2_147_483_647), 404, 'not_found');
    expectError(await getConfig(user, 'abc'), 422, 'validation_error');
    expectError(await getConfig(user, '99999999999'), 422, 'validation_error');
  });

  it('answers 401 without a token', async () => {
    const { project } = await ownedProject();
    expectError(await getConfig(undefined, project.id), 401, 'unauthenticated');
  });
});

describe('PUT /api/projects/{project_id}/config: retention_days', () => {
  it.each([1, 7, 365, 3650])('lets the owner set retention_days to %i', async (days) => {
    const { owner, project } = await ownedProject();
    const response = await putConfig(owner, project.id, { retention_days: days });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().data).toEqual({ ...DEFAULTS, project_id: project.id, retention_days: days });
    expect(typeof response.json().message).toBe('string');
    expect((await storedProject(project.id)).retentionDays).toBe(days);
    expect((await getConfig(owner, project.id)).json().data.retention_days).toBe(days);
  });

  it.each([
    ['0', 0],
    ['3651', 3651],
    ['-1', -1],
    ['1.5', 1.5],
    ['the string "30"', '30'],
    ['null', null],
    ['a boolean', true],
  ])('answers 422 keyed by retention_days for %s and changes nothing', async (_what, value) => {
    const { owner, project } = await ownedProject();
    const error = expectError(await putConfig(owner, project.id, { retention_days: value }), 422, 'validation_error');
    expect(Object.keys(error.errors ?? {})).toEqual(['retention_days']);
    expect((await storedProject(project.id)).retentionDays).toBe(30);
  });
});

describe('PUT /api/projects/{project_id}/config: alert_levels', () => {
  it('sets the alert levels and keeps everything else', async () => {
    const { owner, project } = await ownedProject();
    const response = await putConfig(owner, project.id, { alert_levels: ['error', 'warning'] });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().data).toEqual({ ...DEFAULTS, project_id: project.id, alert_levels: ['error', 'warning'] });
    expect((await storedProject(project.id)).alertLevels).toEqual(['error', 'warning']);
  });

  it('accepts all four levels', async () => {
    const { owner, project } = await ownedProject();
    const levels = ['error', 'warning', 'info', 'debug'];
    const response = await putConfig(owner, project.id, { alert_levels: levels });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().data.alert_levels).toEqual(levels);
  });

  it.each([
    ['an unknown level', ['error', 'critical']],
    ['a duplicate level', ['error', 'error']],
    ['a level in capitals', ['ERROR']],
    ['a string instead of a list', 'error'],
    ['a number in the list', [1]],
  ])('answers 422 for %s and changes nothing', async (_what, value) => {
    const { owner, project } = await ownedProject();
    const error = expectError(await putConfig(owner, project.id, { alert_levels: value }), 422, 'validation_error');
    const keys = Object.keys(error.errors ?? {});
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.every((k) => k === 'alert_levels' || k.startsWith('alert_levels.'))).toBe(true);
    expect((await storedProject(project.id)).alertLevels).toEqual(['error']);
  });
});

describe('PUT /api/projects/{project_id}/config: notification_settings', () => {
  it('merges a partial update over the current settings, keeping the other keys', async () => {
    const { owner, project } = await ownedProject();
    const first = await putConfig(owner, project.id, {
      notification_settings: { webhook_url: 'https://hooks.example.com/logs', quiet_period_minutes: 30 },
    });
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json().data.notification_settings).toEqual({
      ...DEFAULTS.notification_settings,
      webhook_url: 'https://hooks.example.com/logs',
      quiet_period_minutes: 30,
    });

    const second = await putConfig(owner, project.id, { notification_settings: { enabled: true } });
    expect(second.statusCode, second.body).toBe(200);
    const expected = {
      ...DEFAULTS.notification_settings,
      enabled: true,
      webhook_url: 'https://hooks.example.com/logs',
      quiet_period_minutes: 30,
    };
    expect(second.json().data.notification_settings).toEqual(expected);
    expect((await storedProject(project.id)).notificationSettings).toEqual(expected);

    // Updating another field leaves the notification settings alone.
    const third = await putConfig(owner, project.id, { retention_days: 14 });
    expect(third.statusCode).toBe(200);
    expect(third.json().data.notification_settings).toEqual(expected);
  });

  it('replaces the whole threshold when both of its fields are sent', async () => {
    const { owner, project } = await ownedProject();
    const response = await putConfig(owner, project.id, {
      notification_settings: { threshold: { count: 10, window_minutes: 60 } },
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().data.notification_settings.threshold).toEqual({ count: 10, window_minutes: 60 });
  });

  it('merges a partial threshold, keeping its other field', async () => {
    const { owner, project } = await ownedProject();
    expect(
      (await putConfig(owner, project.id, { notification_settings: { threshold: { count: 3, window_minutes: 30 } } })).statusCode,
    ).toBe(200);
    const response = await putConfig(owner, project.id, { notification_settings: { threshold: { count: 10 } } });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().data.notification_settings.threshold).toEqual({ count: 10, window_minutes: 30 });
  });

  it('accepts http and https webhooks and clears one with null', async () => {
    const { owner, project } = await ownedProject();
    const http = await putConfig(owner, project.id, { notification_settings: { webhook_url: 'http://localhost:9000/hook' } });
    expect(http.statusCode, http.body).toBe(200);
    expect(http.json().data.notification_settings.webhook_url).toBe('http://localhost:9000/hook');
    const cleared = await putConfig(owner, project.id, { notification_settings: { webhook_url: null } });
    expect(cleared.statusCode, cleared.body).toBe(200);
    expect(cleared.json().data.notification_settings.webhook_url).toBeNull();
  });

  it('accepts up to 20 e-mail recipients, stored lower-cased', async () => {
    const { owner, project } = await ownedProject();
    const recipients = Array.from({ length: 20 }, (_, i) => `oncall-${i}@example.test`);
    const response = await putConfig(owner, project.id, {
      notification_settings: { email_recipients: ['Ops@Example.test', ...recipients.slice(1)], enabled: true },
    });
    expect(response.statusCode, response.body).toBe(200);
    const settings = response.json().data.notification_settings;
    expect(settings.email_recipients).toHaveLength(20);
    expect(settings.email_recipients[0]).toBe('ops@example.test');
    expect(settings.enabled).toBe(true);
  });

  it.each([
    ['an unknown key', { notification_settings: { slack_channel: '#alerts' } }, 'notification_settings'],
    ['a misspelt key', { notification_settings: { webhookUrl: 'https://hooks.example.com' } }, 'notification_settings'],
    ['an unknown key inside threshold', { notification_settings: { threshold: { count: 2, window_minutes: 5, per: 'x' } } }, 'notification_settings.threshold'],
    ['a webhook that is not a URL', { notification_settings: { webhook_url: 'not a url' } }, 'notification_settings.webhook_url'],
    ['an ftp webhook', { notification_settings: { webhook_url: 'ftp://files.example.com/hook' } }, 'notification_settings.webhook_url'],
    ['a javascript: webhook', { notification_settings: { webhook_url: 'javascript:alert(1)' } }, 'notification_settings.webhook_url'],
    ['an invalid recipient', { notification_settings: { email_recipients: ['ops@example.test', 'not-an-email'] } }, 'notification_settings.email_recipients.1'],
    ['21 recipients', { notification_settings: { email_recipients: Array.from({ length: 21 }, (_, i) => `r${i}@example.test`) } }, 'notification_settings.email_recipients'],
    ['duplicate recipients', { notification_settings: { email_recipients: ['a@example.test', 'A@example.test'] } }, 'notification_settings.email_recipients'],
    ['threshold.count 0', { notification_settings: { threshold: { count: 0, window_minutes: 5 } } }, 'notification_settings.threshold.count'],
    ['threshold.count 1.5', { notification_settings: { threshold: { count: 1.5, window_minutes: 5 } } }, 'notification_settings.threshold.count'],
    ['a negative quiet period', { notification_settings: { quiet_period_minutes: -1 } }, 'notification_settings.quiet_period_minutes'],
    ['enabled as a string', { notification_settings: { enabled: 'yes' } }, 'notification_settings.enabled'],
    ['notification_settings as a list', { notification_settings: [] }, 'notification_settings'],
  ])('answers 422 for %s and changes nothing', async (_what, payload, key) => {
    const { owner, project } = await ownedProject();
    const error = expectError(await putConfig(owner, project.id, payload), 422, 'validation_error');
    expect(Object.keys(error.errors ?? {})).toContain(key);
    expect((await storedProject(project.id)).notificationSettings).toEqual(DEFAULTS.notification_settings);
  });

  it('answers 422 for enabled notifications with neither a webhook nor a recipient', async () => {
    const { owner, project } = await ownedProject();
    const error = expectError(
      await putConfig(owner, project.id, { notification_settings: { enabled: true } }),
      422,
      'validation_error',
    );
    expect(Object.keys(error.errors ?? {}).some((k) => k.startsWith('notification_settings'))).toBe(true);
    expect((await storedProject(project.id)).notificationSettings.enabled).toBe(false);
  });

  it('answers 422 when removing the last destination of enabled notifications', async () => {
    const { owner, project } = await ownedProject();
    const enabled = await putConfig(owner, project.id, {
      notification_settings: { enabled: true, webhook_url: 'https://hooks.example.com/x' },
    });
    expect(enabled.statusCode, enabled.body).toBe(200);
    expectError(await putConfig(owner, project.id, { notification_settings: { webhook_url: null } }), 422, 'validation_error');
    expect((await storedProject(project.id)).notificationSettings).toMatchObject({
      enabled: true,
      webhook_url: 'https://hooks.example.com/x',
    });
    // Disabling and clearing together is fine.
    const off = await putConfig(owner, project.id, { notification_settings: { enabled: false, webhook_url: null } });
    expect(off.statusCode, off.body).toBe(200);
  });

  // A read-modify-write without a row lock loses one of the two on PostgreSQL most of the time;
  // several rounds make the race all but certain to show if it comes back.
  it('keeps both of two concurrent partial updates', async () => {
    for (let round = 0; round < 10; round++) {
      const { owner, project } = await ownedProject();
      const [a, b] = await Promise.all([
        putConfig(owner, project.id, { notification_settings: { webhook_url: `https://hooks.example.com/${round}` } }),
        putConfig(owner, project.id, { notification_settings: { email_recipients: [`r${round}@example.test`] } }),
      ]);
      expect(a.statusCode, a.body).toBe(200);
      expect(b.statusCode, b.body).toBe(200);
      expect((await storedProject(project.id)).notificationSettings).toMatchObject({
        webhook_url: `https://hooks.example.com/${round}`,
        email_recipients: [`r${round}@example.test`],
      });
    }
  });
});

describe('PUT /api/projects/{project_id}/config: body and access', () => {
  it('updates several fields at once and ignores unknown top-level fields', async () => {
    const { owner, project } = await ownedProject();
    const response = await putConfig(owner, project.id, {
      retention_days: 60,
      alert_levels: ['warning'],
      notification_settings: { email_recipients: ['team@example.test'] },
      name: 'Renamed through config',
      project_id: 999,
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().data).toEqual({
      project_id: project.id,
      retention_days: 60,
      alert_levels: ['warning'],
      notification_settings: { ...DEFAULTS.notification_settings, email_recipients: ['team@example.test'] },
    });
    expect((await storedProject(project.id)).name).toBe(project.name);
  });

  it('answers 422 for an empty body', async () => {
    const { owner, project } = await ownedProject();
    expectError(await putConfig(owner, project.id, {}), 422, 'validation_error');
  });

  it('answers 400 bad_request for malformed JSON', async () => {
    const { owner, project } = await ownedProject();
    const response = await t.app.inject({
      method: 'PUT',
      url: url(project.id),
      headers: { ...owner.headers, 'content-type': 'application/json' },
      payload: '{"retention_days": ',
    });
    expectError(response, 400, 'bad_request');
  });

  it('answers 403 forbidden to a member and changes nothing', async () => {
    const { project } = await ownedProject();
    const member = await createUser(t);
    await addMember(t, project.id, member);
    expectError(await putConfig(member, project.id, { retention_days: 1 }), 403, 'forbidden');
    expect((await storedProject(project.id)).retentionDays).toBe(30);
  });

  it('answers 404 not_found to a stranger and changes nothing', async () => {
    const { project } = await ownedProject();
    const stranger = await createUser(t);
    expectError(await putConfig(stranger, project.id, { retention_days: 1 }), 404, 'not_found');
    expect((await storedProject(project.id)).retentionDays).toBe(30);
  });

  it('answers 401 without a token and changes nothing', async () => {
    const { project } = await ownedProject();
    expectError(await putConfig(undefined, project.id, { retention_days: 1 }), 401, 'unauthenticated');
    expect((await storedProject(project.id)).retentionDays).toBe(30);
  });
});
