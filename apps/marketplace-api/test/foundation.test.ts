import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mailOutbox } from '../src/db/schema/index.js';
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
