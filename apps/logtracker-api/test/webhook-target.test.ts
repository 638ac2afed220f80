import { eq, sql } from 'drizzle-orm';
import { fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { projects } from '../src/db/schema/index.js';
import { createWebhookAgent, isPrivateAddress, literalTargetProblem } from '../src/modules/alerts/webhook-target.js';
import { configureAlerts, deliveriesOfProject, errors, postBatch, startHttpServer } from './alerts-support.js';
import { buildTestApp, createProject, createUser, type TestApp } from './helpers.js';

describe('which addresses a webhook may reach', () => {
  it('refuses private, loopback, link-local and reserved addresses, in IPv4 and IPv6', () => {
    for (const address of ['127.0.0.1', '10.1.2.3', '172.20.0.5', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1', '::1', '::', 'fd00::1', 'fe80::1', '::ffff:127.0.0.1', '::ffff:a9fe:a9fe', '64:ff9b::10.0.0.1']) {
      expect(isPrivateAddress(address), address).toBe(true);
    }
    for (const address of ['93.184.215.14', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '172.32.0.1']) {
      expect(isPrivateAddress(address), address).toBe(false);
    }
  });

  it('tells a private target from its URL when it can, before any DNS', () => {
    expect(literalTargetProblem('http://169.254.169.254/latest/meta-data/')).toMatch(/private/);
    expect(literalTargetProblem('http://[::1]:8080/hook')).toMatch(/private/);
    expect(literalTargetProblem('http://localhost:9000/')).toMatch(/local host name/);
    expect(literalTargetProblem('https://metadata.google.internal/')).toMatch(/local host name/);
    expect(literalTargetProblem('https://hooks.example.com/alerts')).toBeNull();
    expect(literalTargetProblem('https://8.8.8.8/alerts')).toBeNull();
  });

  it('refuses at connection a name that resolves to a private address', async () => {
    const server = await startHttpServer((_req, res) => res.writeHead(200).end());
    const agent = createWebhookAgent({ allowPrivateNetworks: false });
    try {
      const port = new URL(server.url).port;
      const error = await fetch(`http://localhost:${port}/`, { method: 'POST', dispatcher: agent }).then(
        () => null,
        (e: Error) => e,
      );
      expect(error).toBeInstanceOf(Error);
      expect(String((error as Error & { cause?: Error }).cause?.message)).toMatch(/resolves to a private address/);
      expect(server.requests).toHaveLength(0);
      // The same request goes through when private networks are allowed.
      const open = createWebhookAgent({ allowPrivateNetworks: true });
      const res = await fetch(`http://localhost:${port}/`, { method: 'POST', dispatcher: open });
      expect(res.status).toBe(200);
      await open.close();
    } finally {
      await agent.close();
      await server.close();
    }
  });

  it('allows private networks outside production unless told otherwise, and refuses them in production', () => {
    const base = { LOG_LEVEL: 'silent', DATA_DIR: 'memory://' };
    expect(loadConfig({ ...base, NODE_ENV: 'development' }).alerts.allowPrivateNetworks).toBe(true);
    expect(loadConfig({ ...base, NODE_ENV: 'test', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' }).alerts.allowPrivateNetworks).toBe(false);
    expect(loadConfig({ ...base, NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(40), SMTP_URL: 'smtp://mail.example.com' }).alerts.allowPrivateNetworks).toBe(false);
  });
});

describe('webhooks with private networks refused', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false', WEBHOOK_TIMEOUT_MS: '2000' });
  });
  afterAll(() => t.close());

  it('refuses a private webhook URL in the project configuration (422)', async () => {
    const owner = await createUser(t);
    const project = await createProject(t, owner);
    const res = await t.app.inject({
      method: 'PUT',
      url: `/api/projects/${project.id}/config`,
      headers: owner.headers,
      payload: { notification_settings: { enabled: true, webhook_url: 'http://169.254.169.254/latest/meta-data/' } },
    });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors).toHaveProperty(['notification_settings.webhook_url']);
    await expect(configureAlerts(t, owner, project.id, { webhook_url: 'https://hooks.example.com/alerts' })).resolves.toBeUndefined();
  });

  it('does not deliver to a private address stored before the rule, and says why', async () => {
    const server = await startHttpServer((_req, res) => res.writeHead(200).end());
    try {
      const owner = await createUser(t);
      const project = await createProject(t, owner);
      await configureAlerts(t, owner, project.id, { webhook_url: 'https://hooks.example.com/alerts', threshold: { count: 1, window_minutes: 5 } });
      await t.database.db
        .update(projects)
        .set({ notificationSettings: sql`jsonb_set(${projects.notificationSettings}, '{webhook_url}', to_jsonb(${server.url}::text))` })
        .where(eq(projects.id, project.id));
      await postBatch(t, owner, project.id, errors(1));
      await t.app.alerting.evaluator.settled();
      await t.app.alerting.worker.runOnce();
      const [delivery] = await deliveriesOfProject(t, project.id);
      expect(delivery).toMatchObject({ channel: 'webhook', target: server.url, status: 'pending', attempts: 1 });
      expect(delivery!.lastError).toMatch(/refused.*private/);
      expect(server.requests).toHaveLength(0);
    } finally {
      await server.close();
    }
  });
});
