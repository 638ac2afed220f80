import { Writable } from 'node:stream';
import { ConfigError } from '@repo/config';
import { desc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { mailOutbox } from '../src/db/schema/index.js';
import { createMailer } from '../src/integrations/mail/mailer.js';
import { defineTemplate } from '../src/integrations/mail/templates.js';
import { siretValid } from '../src/lib/siret.js';
import { bearer, buildTestApp, createAdmin, createClient, expectError, validSiret, type TestApp } from './helpers.js';
import { startSmtpSink } from './mail-sink.js';

const greeting = defineTemplate<{ name: string }>('greeting', {
  fr: ({ name }) => ({ subject: `Bonjour ${name}`, paragraphs: [`Bienvenue, ${name} <3`], action: { label: 'Ouvrir', url: 'https://app.example/x?a=1&b=2' } }),
  en: ({ name }) => ({ subject: `Hello ${name}`, paragraphs: [`Welcome, ${name} <3`] }),
});

describe('SIRET', () => {
  it('accepts 14 digits passing Luhn and refuses the rest', () => {
    expect(siretValid('73282932000074')).toBe(true);
    expect(siretValid('73282932000075')).toBe(false);
    expect(siretValid('7328293200007')).toBe(false);
    expect(siretValid('7328293200007a')).toBe(false);
    expect(siretValid(validSiret(42))).toBe(true);
    // La Poste's establishments are checked by their digit sum instead.
    expect(siretValid('35600000049837')).toBe(true);
  });
});

describe('mail over SMTP', () => {
  let sink: Awaited<ReturnType<typeof startSmtpSink>>;
  let t: TestApp;
  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await buildTestApp({ SMTP_URL: sink.url, MAIL_FROM: 'Garage Market <hello@market.test>' });
  });
  afterAll(async () => {
    await t.close();
    await sink.close();
  });

  it('renders the template in the recipient language, sends it, and records it in the outbox', async () => {
    t.app.mailer.send(greeting, { email: 'lea@example.test', lang: 'fr' }, { name: 'Léa' });
    t.app.mailer.send(greeting, { email: 'sam@example.test', lang: 'en' }, { name: 'Sam' });
    await t.app.mailer.idle();
    const [fr] = sink.to('lea@example.test');
    expect(fr).toMatchObject({ from: 'hello@market.test', subject: 'Bonjour Léa' });
    expect(fr!.text).toContain('Bienvenue, Léa <3');
    expect(fr!.text).toContain('Ouvrir: https://app.example/x?a=1&b=2');
    expect(fr!.html).toContain('Bienvenue, Léa &lt;3');
    expect(fr!.html).toContain('href="https://app.example/x?a=1&amp;b=2"');
    expect(sink.to('sam@example.test')[0]!.subject).toBe('Hello Sam');
    const rows = await t.database.db.select().from(mailOutbox);
    expect(rows.map((r) => [r.to, r.status, r.template, r.lang]).sort()).toEqual([
      ['lea@example.test', 'sent', 'greeting', 'fr'],
      ['sam@example.test', 'sent', 'greeting', 'en'],
    ]);
  });
});

describe('mail in production', () => {
  const production = { NODE_ENV: 'production', JWT_SECRET: 'a-production-secret-that-is-long-enough', DATA_DIR: 'memory://' };

  it('refuses to start without SMTP_URL, with a readable configuration error', () => {
    expect(() => loadConfig(production)).toThrow(ConfigError);
    expect(() => loadConfig(production)).toThrow(/SMTP_URL: required in production/);
    expect(loadConfig({ ...production, SMTP_URL: 'smtps://user:pass@smtp.example.com:465' }).mail.smtpUrl).toBe('smtps://user:pass@smtp.example.com:465');
  });

  it('has no built-in mailer to fall back on', () => {
    const log = { info: () => undefined, error: () => undefined };
    expect(() => createMailer({ db: {} as never, log, from: 'x@example.test', production: true })).toThrow(/SMTP_URL/);
  });
});

describe('built-in mailer logging', () => {
  const lines: string[] = [];
  let t: TestApp;
  beforeAll(async () => {
    const stream = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        callback();
      },
    });
    t = await buildTestApp({ APP_URL: 'https://app.example', RATE_LIMIT_PUBLIC: '100000' }, { logger: { level: 'trace', stream } });
  });
  afterAll(() => t.close());

  it('logs the template, the recipient domain and the outbox id, never the link, code, subject or address', async () => {
    const client = await createClient(t);
    for (const url of ['/api/v1/auth/forgot-password', '/api/v1/auth/send-password-reset-otp']) {
      const res = await t.app.inject({ method: 'POST', url, payload: { email: client.email } });
      expect(res.statusCode, res.body).toBe(200);
    }
    await t.app.mailer.idle();
    const mails = await t.database.db.select().from(mailOutbox).where(eq(mailOutbox.to, client.email)).orderBy(desc(mailOutbox.id));
    // A link opened in a browser: the token in the query string is not written to the request log.
    const opened = await t.app.inject({ method: 'GET', url: '/api/v1/auth/verify-email?token=link-token-from-a-mail-0123456789' });
    expect(opened.statusCode).toBe(422);
    expect(lines.join('\n')).not.toContain('link-token-from-a-mail');
    expect(lines.join('\n')).toContain('/api/v1/auth/verify-email?token=[REDACTED]');
    expect(mails.map((m) => m.template).sort()).toEqual(['password_reset_link', 'password_reset_otp']);
    // The outbox keeps the message for development and tests.
    const link = /https:\/\/app\.example\/reset-password\?token=([A-Za-z0-9_%-]+)/.exec(mails.find((m) => m.template === 'password_reset_link')!.text);
    const code = /\b(\d{6})\b/.exec(mails.find((m) => m.template === 'password_reset_otp')!.text);
    expect(link).not.toBeNull();
    expect(code).not.toBeNull();

    const mailLines = lines.map((l) => JSON.parse(l) as { mail?: Record<string, unknown>; msg: string }).filter((l) => l.mail);
    expect(mailLines).toHaveLength(2);
    for (const line of mailLines) {
      expect(line.mail).toEqual({ template: expect.stringMatching(/^password_reset_/), to_domain: 'example.test', outbox_id: expect.any(Number) });
    }
    const everything = lines.join('\n');
    for (const secret of [link![1]!, decodeURIComponent(link![1]!), 'reset-password?token', client.email, mails[0]!.subject]) {
      expect(everything).not.toContain(secret);
    }
    // The code as a number of its own (timestamps are longer runs of digits).
    expect(everything).not.toMatch(new RegExp(`(?<!\\d)${code![1]}(?!\\d)`));
  });
});

describe('built-in mailer and sessions', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ BOOTSTRAP_ADMIN_EMAIL: 'Root@Example.test', BOOTSTRAP_ADMIN_PASSWORD: 'bootstrap-secret' });
  });
  afterAll(() => t.close());

  it('keeps messages in the outbox as logged when no SMTP server is configured', async () => {
    t.app.mailer.send(greeting, { email: 'nobody@example.test', lang: 'en' }, { name: 'N' });
    await t.app.mailer.idle();
    const rows = await t.database.db.select().from(mailOutbox);
    expect(rows).toEqual([expect.objectContaining({ to: 'nobody@example.test', status: 'logged', subject: 'Hello N' })]);
  });

  it('creates the bootstrap administrator once', async () => {
    const { users } = await import('../src/db/schema/index.js');
    const rows = await t.database.db.select().from(users);
    expect(rows.filter((u) => u.role === 'admin').map((u) => u.email)).toEqual(['root@example.test']);
  });

  it('serves public media only, and 404s for anything else', async () => {
    expectError(await t.app.inject({ method: 'GET', url: '/api/v1/media/private/documents/2026/01/x.pdf' }), 404, 'not_found');
    expectError(await t.app.inject({ method: 'GET', url: '/api/v1/media/public/photos/..%2F..%2F..%2Fsecrets.jpg' }), 404, 'not_found');
    expectError(await t.app.inject({ method: 'GET', url: '/api/v1/media/public/photos/2026/01/none.jpg' }), 404, 'not_found');
  });

  it('issues tokens bound to sessions of active users', async () => {
    const client = await createClient(t);
    const admin = await createAdmin(t);
    expect(client.token).toBeTruthy();
    expect(admin.user.role).toBe('admin');
    // The health route needs no token; a bogus token on a public route is simply ignored.
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/health', headers: bearer('nonsense') });
    expect(res.statusCode).toBe(200);
  });
});
