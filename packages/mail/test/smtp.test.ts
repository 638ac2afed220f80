import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { ConfigError } from '@repo/config';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSmtpTransport, mailLogFields, smtpCode, smtpTransportFor } from '../src/index.js';

interface Received {
  from: string;
  to: string[];
  user: string | undefined;
  raw: string;
}

/** A real SMTP server on loopback requiring a login, refusing the recipients listed in `reject`. */
async function startSink(opts: { user: string; pass: string; reject: string[] }) {
  const messages: Received[] = [];
  const server = new SMTPServer({
    logger: false,
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    onAuth(auth, _session, callback) {
      if (auth.username === opts.user && auth.password === opts.pass) callback(null, { user: auth.username });
      else callback(new Error('Invalid username or password'));
    },
    onRcptTo(address, _session, callback) {
      if (opts.reject.includes(address.address)) callback(Object.assign(new Error('5.1.1 mailbox unavailable'), { responseCode: 550 }));
      else callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          user: typeof session.user === 'string' ? session.user : undefined,
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  server.listen(0, '127.0.0.1');
  await once(server.server, 'listening');
  const { port } = server.server.address() as AddressInfo;
  return { port, messages, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('createSmtpTransport', { timeout: 30_000 }, () => {
  let sink: Awaited<ReturnType<typeof startSink>>;
  beforeAll(async () => {
    sink = await startSink({ user: 'mailer', pass: 's3cret/pass', reject: ['nobody@example.test'] });
  });
  afterAll(() => sink?.close());

  const url = () => `smtp://mailer:${encodeURIComponent('s3cret/pass')}@127.0.0.1:${sink.port}`;

  it('sends with the URL’s credentials and the From given, text and HTML, and answers the Message-ID', async () => {
    const transport = createSmtpTransport({ url: url(), from: 'Alerts <alerts@example.test>' });
    try {
      const { messageId } = await transport.send({ to: 'ops@example.test', subject: 'Disk full', text: 'Plain body', html: '<p>HTML body</p>' });

      expect(messageId).toMatch(/^<.+@.+>$/);
      const received = sink.messages.at(-1)!;
      expect(received).toMatchObject({ from: 'alerts@example.test', to: ['ops@example.test'], user: 'mailer' });
      expect(received.raw).toContain('Subject: Disk full');
      expect(received.raw).toContain(`Message-ID: ${messageId}`);
      expect(received.raw).toContain('Plain body');
      expect(received.raw).toContain('<p>HTML body</p>');
    } finally {
      await transport.close();
    }
  });

  it('sends a text-only message as text/plain alone', async () => {
    const transport = createSmtpTransport({ url: url(), from: 'alerts@example.test' });
    try {
      await transport.send({ to: 'ops@example.test', subject: 'Text', text: 'Only text' });
      const raw = sink.messages.at(-1)!.raw;
      expect(raw).toMatch(/Content-Type: text\/plain/i);
      expect(raw).not.toMatch(/text\/html/i);
    } finally {
      await transport.close();
    }
  });

  it('rejects, with the SMTP reply code readable, when the server refuses the recipient', async () => {
    const transport = createSmtpTransport({ url: url(), from: 'alerts@example.test' });
    const before = sink.messages.length;
    try {
      const error = await transport.send({ to: 'nobody@example.test', subject: 'x', text: 'x' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Error);
      expect(smtpCode(error)).toBe(550);
      expect(sink.messages).toHaveLength(before);
    } finally {
      await transport.close();
    }
  });

  it('rejects when the credentials are wrong', async () => {
    const transport = createSmtpTransport({ url: `smtp://mailer:wrong@127.0.0.1:${sink.port}`, from: 'alerts@example.test' });
    try {
      const error = await transport.send({ to: 'ops@example.test', subject: 'x', text: 'x' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Error);
      // 535: authentication failed, as a real server answers a wrong password.
      expect(smtpCode(error)).toBe(535);
    } finally {
      await transport.close();
    }
  });
});

describe('smtpTransportFor', () => {
  it('is SMTP with a URL, none without one, and a configuration error in production without one', async () => {
    const transport = smtpTransportFor({ smtpUrl: 'smtp://127.0.0.1:1', from: 'x@example.test', production: true });
    expect(transport?.kind).toBe('smtp');
    await transport?.close();
    expect(smtpTransportFor({ from: 'x@example.test' })).toBeUndefined();
    expect(() => smtpTransportFor({ from: 'x@example.test', production: true })).toThrow(ConfigError);
    expect(() => smtpTransportFor({ from: 'x@example.test', production: true })).toThrow(/SMTP_URL: required in production/);
  });
});

describe('mailLogFields and smtpCode', () => {
  it('name the template, the recipient’s domain and the ids, never the address', () => {
    expect(mailLogFields('alert', 'ops@example.test')).toEqual({ mail: { template: 'alert', to_domain: 'example.test' } });
    expect(mailLogFields('reset', 'a@b@example.test', { outboxId: 7, messageId: '<m@x>' })).toEqual({
      mail: { template: 'reset', to_domain: 'example.test', outbox_id: 7, message_id: '<m@x>' },
    });
    expect(JSON.stringify(mailLogFields('x', 'no-at-sign'))).not.toContain('no-at-sign');
  });

  it('reads the SMTP reply code, else nodemailer’s code, else nothing', () => {
    expect(smtpCode({ responseCode: 421, code: 'EENVELOPE' })).toBe(421);
    expect(smtpCode({ code: 'ECONNECTION' })).toBe('ECONNECTION');
    expect(smtpCode(new Error('plain'))).toBeUndefined();
    expect(smtpCode('text')).toBeUndefined();
    expect(smtpCode(null)).toBeUndefined();
  });
});
