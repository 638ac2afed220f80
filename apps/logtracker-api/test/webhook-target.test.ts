import { hostname } from 'node:os';
import type { LookupAddress } from 'node:dns';
import { eq, sql } from 'drizzle-orm';
import { fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { projects } from '../src/db/schema/index.js';
import {
  createWebhookGuard,
  isSpecialAddress,
  literalTargetProblem,
  publicLookup,
  webhookTargetProblem,
  type ResolveHost,
} from '../src/modules/alerts/webhook-target.js';
import { configureAlerts, deliveriesOfProject, errors, postBatch, startHttpServer } from './alerts-support.js';
import { buildTestApp, createProject, createUser, type TestApp } from './helpers.js';

/** A DNS stub: names answer from the table (which a test may change), anything else is not found. */
function stubDns(table: Record<string, string[]>): ResolveHost {
  return async (name) => {
    const addresses = table[name.toLowerCase()];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return addresses.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}

const dns: Record<string, string[]> = {
  'hooks.example.com': ['93.184.215.14', '2606:2800:220:1:248:1893:25c8:1946'],
  // Wildcard DNS services answer the address written in the name.
  '10.0.0.1.nip.io': ['10.0.0.1'],
  '169.254.169.254.nip.io': ['169.254.169.254'],
  'app.127.0.0.1.nip.io': ['127.0.0.1'],
  // One public and one private answer: refused, since the connection may pick either.
  'mixed.example.com': ['93.184.215.14', '192.168.1.10'],
  'v6-loopback.example.com': ['::1'],
  'mapped.example.com': ['::ffff:127.0.0.1'],
  'nat64.example.com': ['64:ff9b::a9fe:a9fe'],
  'cgnat.example.com': ['100.64.12.1'],
};

describe('which addresses a webhook may reach', () => {
  it('refuses every special range, in IPv4, IPv6 and IPv4 carried inside IPv6', () => {
    const special = [
      '127.0.0.1', '10.1.2.3', '172.20.0.5', '192.168.1.1', '169.254.169.254', '100.64.0.1', '100.127.255.254', '0.0.0.0',
      '224.0.0.1', '255.255.255.255', '192.0.2.1', '198.18.0.1', '240.0.0.1',
      '::1', '::', 'fd00::1', 'fc00::1', 'fe80::1', 'ff02::1', 'fec0::1', '2001:db8::1', '100::1',
      // IPv4-mapped, in both spellings.
      '::ffff:127.0.0.1', '::ffff:a9fe:a9fe', '::ffff:10.0.0.1',
      // IPv4-compatible (deprecated): `http://[::127.0.0.1]`.
      '::127.0.0.1', '::7f00:1', '::8.8.8.8',
      // NAT64 of private addresses, and the local-use NAT64 prefix.
      '64:ff9b::10.0.0.1', '64:ff9b::a9fe:a9fe', '64:ff9b::7f00:1', '64:ff9b:1::a00:1',
      // 6to4 and Teredo tunnel to an embedded IPv4.
      '2002:7f00:1::1', '2002:808:808::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2',
    ];
    for (const address of special) expect(isSpecialAddress(address), address).toBe(true);
    for (const address of ['93.184.215.14', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808']) {
      expect(isSpecialAddress(address), address).toBe(false);
    }
  });

  it('tells a special target from its URL when it can, before any DNS', () => {
    expect(literalTargetProblem('http://169.254.169.254/latest/meta-data/')).toMatch(/special address/);
    expect(literalTargetProblem('http://[::1]:8080/hook')).toMatch(/special address/);
    expect(literalTargetProblem('http://localhost:9000/')).toMatch(/local host name/);
    expect(literalTargetProblem('https://metadata.google.internal/')).toMatch(/local host name/);
    expect(literalTargetProblem('https://hooks.example.com/alerts')).toBeNull();
    expect(literalTargetProblem('https://8.8.8.8/alerts')).toBeNull();
  });

  it('refuses a table of hostile URLs, resolving names through the DNS stub', async () => {
    const resolve = stubDns(dns);
    const hostile = [
      `http://${hostname()}:8080/hook`,
      `http://${hostname().toUpperCase()}./hook`,
      'http://LOCALHOST./hook',
      'http://LocalHost:3000/',
      'http://api.localhost/',
      'http://intranet/hook',
      'http://[::127.0.0.1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://[::ffff:7f00:1]:8080/',
      'http://[64:ff9b::a00:1]/',
      'http://[2002:a00:1::1]/',
      'http://[fd12:3456::1]/',
      'http://[fe80::1%25eth0]/',
      'http://100.64.1.1/',
      'http://0x7f.1/',
      'http://2130706433/',
      'http://0177.0.0.1/',
      'http://10.0.0.1.nip.io/',
      'http://169.254.169.254.nip.io/latest/meta-data/',
      'http://app.127.0.0.1.nip.io:8080/',
      'https://mixed.example.com/hook',
      'https://v6-loopback.example.com/hook',
      'https://mapped.example.com/hook',
      'https://nat64.example.com/hook',
      'https://cgnat.example.com/hook',
      'https://does-not-resolve.example.com/hook',
      'ftp://hooks.example.com/',
      'not a url',
    ];
    for (const url of hostile) expect(await webhookTargetProblem(url, resolve), url).not.toBeNull();
  });

  it('accepts a public name and a public address', async () => {
    const resolve = stubDns(dns);
    expect(await webhookTargetProblem('https://hooks.example.com/alerts', resolve)).toBeNull();
    expect(await webhookTargetProblem('https://HOOKS.example.com./alerts', resolve)).toBeNull();
    expect(await webhookTargetProblem('http://93.184.215.14:8080/alerts', resolve)).toBeNull();
    expect(await webhookTargetProblem('https://[2606:4700:4700::1111]/alerts', resolve)).toBeNull();
  });

  it('gives the socket only addresses that pass, from its own lookup', async () => {
    const lookup = publicLookup(stubDns(dns));
    const answer = (name: string, options: { all?: boolean }) =>
      new Promise<{ error: Error | null; address: unknown; family?: number }>((resolve) =>
        lookup(name, options, (error, address, family) => resolve({ error, address, family })),
      );
    expect(await answer('hooks.example.com', {})).toEqual({ error: null, address: '93.184.215.14', family: 4 });
    expect((await answer('hooks.example.com', { all: true })).address).toHaveLength(2);
    expect((await answer('mixed.example.com', { all: true })).error?.message).toMatch(/special address \(192\.168\.1\.10\)/);
  });

  it('connects to the address that was checked: a name rebound to loopback after the check is refused', async () => {
    const server = await startHttpServer((_req, res) => res.writeHead(200).end());
    const table = { 'rebind.example.com': ['93.184.215.14'] };
    const guard = createWebhookGuard({ allowPrivateNetworks: false, resolve: stubDns(table) });
    try {
      const url = `http://rebind.example.com:${new URL(server.url).port}/hook`;
      expect(await guard.problem(url)).toBeNull();
      // The attacker's DNS now answers loopback, where the test server listens.
      table['rebind.example.com'] = ['127.0.0.1'];
      const error = await fetch(url, { method: 'POST', dispatcher: guard.agent }).then(
        () => null,
        (e: Error) => e,
      );
      expect(String((error as Error & { cause?: Error }).cause?.message)).toMatch(/special address \(127\.0\.0\.1\)/);
      expect(server.requests).toHaveLength(0);
      // With private networks allowed (development), the same request goes through.
      const open = createWebhookGuard({ allowPrivateNetworks: true, resolve: stubDns(table) });
      expect(await open.problem(url)).toBeNull();
      expect((await fetch(url, { method: 'POST', dispatcher: open.agent })).status).toBe(200);
      await open.close();
    } finally {
      await guard.close();
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
    t = await buildTestApp({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false', WEBHOOK_TIMEOUT_MS: '2000' }, { resolveHost: stubDns(dns) });
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

  it('resolves the name when the URL is configured: a name of a private address is refused (422)', async () => {
    const owner = await createUser(t);
    const project = await createProject(t, owner);
    for (const url of ['http://10.0.0.1.nip.io/hook', 'http://LOCALHOST./hook', 'http://[::127.0.0.1]/hook', `http://${hostname()}:8080/`]) {
      const res = await t.app.inject({
        method: 'PUT',
        url: `/api/projects/${project.id}/config`,
        headers: owner.headers,
        payload: { notification_settings: { enabled: true, webhook_url: url } },
      });
      expect(res.statusCode, url).toBe(422);
      expect(res.json().errors['notification_settings.webhook_url'], url).toHaveLength(1);
    }
  });

  it('resolves the name again at delivery: a name rebound to a private address since is not delivered to', async () => {
    const owner = await createUser(t);
    const project = await createProject(t, owner);
    dns['later.example.com'] = ['93.184.215.14'];
    await configureAlerts(t, owner, project.id, { webhook_url: 'https://later.example.com/alerts', threshold: { count: 1, window_minutes: 5 } });
    dns['later.example.com'] = ['169.254.169.254'];
    await postBatch(t, owner, project.id, errors(1));
    await t.app.alerting.evaluator.settled();
    await t.app.alerting.worker.runOnce();
    const [delivery] = await deliveriesOfProject(t, project.id);
    expect(delivery).toMatchObject({ channel: 'webhook', status: 'pending', attempts: 1 });
    expect(delivery!.lastError).toMatch(/refused.*169\.254\.169\.254/);
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
