import { Writable } from 'node:stream';
import { ConfigError } from '@repo/config';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  configureAlerts,
  deliveriesOfProject,
  errors,
  mailHeader,
  mailPart,
  postBatch,
  startSmtpSink,
} from './alerts-support.js';
import { buildTestApp, createProject, createUser, type TestApp } from './helpers.js';
import { loadConfig } from '../src/config.js';
import { createMailer, type LogMailer } from '../src/integrations/mail/index.js';
import { createLogMailer } from '../src/integrations/mail/mailer.js';

const MAIL_FROM = 'Ops Alerts <ops-alerts@example.test>';

let smtp: Awaited<ReturnType<typeof startSmtpSink>>;
let t: TestApp;
beforeAll(async () => {
  smtp = await startSmtpSink({ user: 'alerts', pass: 's3cret pass', reject: ['bounce@example.test'] });
  t = await buildTestApp({ SMTP_URL: smtp.url, MAIL_FROM });
});
afterAll(async () => {
  await t.close();
  await smtp.close();
});

async function emailAlert(app: TestApp, recipients: string[], name = 'Billing worker') {
  const owner = await createUser(app);
  const project = await createProject(app, owner, { name });
  await configureAlerts(app, owner, project.id, { email_recipients: recipients, threshold: { count: 3, window_minutes: 15 } });
  await postBatch(app, owner, project.id, [
    ...errors(2, 'invoice export failed'),
    { level: 'error', message: 'template <script>alert(1)</script> broken', source: 'pdf' },
    { level: 'info', message: 'not a sample' },
  ]);
  await app.app.alerting.evaluator.settled();
  return { owner, project };
}

describe('e-mail delivery over SMTP', () => {
  it('sends one message per recipient through the SMTP server, with the alert in text and HTML', async () => {
    const { project } = await emailAlert(t, ['oncall@example.test', 'lead@example.test']);
    expect(await t.app.alerting.worker.runOnce()).toEqual({ claimed: 2, delivered: 2, retried: 0, failed: 0 });

    const received = smtp.messages.filter((m) => m.raw.includes('Billing worker'));
    expect(received.map((m) => m.to)).toEqual(expect.arrayContaining([['oncall@example.test'], ['lead@example.test']]));
    expect(received).toHaveLength(2);
    for (const message of received) {
      // The credentials of SMTP_URL were used, and MAIL_FROM is the sender.
      expect(message.user).toBe('alerts');
      expect(message.from).toBe('ops-alerts@example.test');
      expect(mailHeader(message.raw, 'From')).toBe('Ops Alerts <ops-alerts@example.test>');
      expect(mailHeader(message.raw, 'To')).toBe(message.to[0]);
      expect(mailHeader(message.raw, 'Subject')).toBe('[Log Tracker] Billing worker: 3 error logs in 15 min');

      const text = mailPart(message.raw, 'text/plain');
      expect(text).toContain(`3 logs at level error in the last 15 minutes (threshold 3) in project "Billing worker" (#${project.id}).`);
      expect(text).toContain('ERROR (api): invoice export failed #0');
      expect(text).toContain('ERROR (api): invoice export failed #1');
      expect(text).toContain('ERROR (pdf): template <script>alert(1)</script> broken');
      expect(text).not.toContain('not a sample');

      const html = mailPart(message.raw, 'text/html');
      expect(html).toContain('Billing worker');
      expect(html).toContain('template &lt;script&gt;alert(1)&lt;/script&gt; broken');
      expect(html).not.toContain('<script>');
    }
    const deliveries = await deliveriesOfProject(t, project.id);
    expect(deliveries.map((d) => [d.target, d.status, d.attempts])).toEqual([
      ['oncall@example.test', 'delivered', 1],
      ['lead@example.test', 'delivered', 1],
    ]);
  });

  it('retries only the recipient the server refused', async () => {
    const { project } = await emailAlert(t, ['bounce@example.test', 'ops@example.test'], 'Search indexer');
    expect(await t.app.alerting.worker.runOnce()).toEqual({ claimed: 2, delivered: 1, retried: 1, failed: 0 });
    const [bounced, reached] = await deliveriesOfProject(t, project.id);
    expect(bounced).toMatchObject({ target: 'bounce@example.test', status: 'pending', attempts: 1 });
    expect(bounced!.lastError).toMatch(/550/);
    expect(reached).toMatchObject({ target: 'ops@example.test', status: 'delivered', attempts: 1 });
    const received = smtp.messages.filter((m) => m.raw.includes('Search indexer'));
    expect(received.map((m) => m.to)).toEqual([['ops@example.test']]);
  });
});

describe('e-mail without SMTP_URL', () => {
  it('keeps the message in the in-memory outbox, logs no content, and counts it delivered', async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        callback();
      },
    });
    const offline = await buildTestApp({}, { logger: { level: 'trace', stream } });
    try {
      const mailer = offline.app.alerting.mailer as LogMailer;
      expect(mailer.kind).toBe('log');
      const { project } = await emailAlert(offline, ['oncall@example.test'], 'Offline project');
      expect(await offline.app.alerting.worker.runOnce()).toMatchObject({ claimed: 1, delivered: 1 });
      expect(mailer.outbox).toEqual([
        expect.objectContaining({
          to: 'oncall@example.test',
          from: 'Log Tracker <alerts@logtracker.local>',
          subject: '[Log Tracker] Offline project: 3 error logs in 15 min',
        }),
      ]);
      expect(mailer.outbox[0]!.text).toContain('invoice export failed #0');

      const logged = lines.map((l) => JSON.parse(l) as { mail?: Record<string, unknown> }).filter((l) => l.mail);
      expect(logged.map((l) => l.mail)).toEqual([{ template: 'alert', to_domain: 'example.test', message_id: mailer.outbox[0]!.id }]);
      const everything = lines.join('\n');
      for (const content of ['invoice export failed', 'Offline project: 3 error', 'oncall@example.test', '<script>']) {
        expect(everything).not.toContain(content);
      }
      expect((await deliveriesOfProject(offline, project.id))[0]).toMatchObject({ status: 'delivered', attempts: 1 });
    } finally {
      await offline.close();
    }
  });

  it('keeps at most the latest messages', async () => {
    const mailer = createLogMailer({ log: { info: () => undefined }, from: 'x@example.test', limit: 3 });
    for (let i = 0; i < 5; i++) await mailer.send({ to: `r${i}@example.test`, subject: `s${i}`, text: 't' });
    expect(mailer.outbox.map((m) => m.to)).toEqual(['r2@example.test', 'r3@example.test', 'r4@example.test']);
  });
});

describe('e-mail in production', () => {
  const production = { NODE_ENV: 'production', JWT_SECRET: 'a-production-secret-that-is-long-enough', DATA_DIR: 'memory://' };

  it('refuses to start without SMTP_URL, with a readable configuration error', () => {
    expect(() => loadConfig(production)).toThrow(ConfigError);
    expect(() => loadConfig(production)).toThrow(/SMTP_URL: required in production/);
    expect(loadConfig({ ...production, SMTP_URL: 'smtp://mail.example.com:587' }).mail.smtpUrl).toBe('smtp://mail.example.com:587');
    expect(() => createMailer({ from: 'x@example.test', production: true }, { info: () => undefined })).toThrow(/SMTP_URL/);
  });
});
