import type { FastifyBaseLogger } from 'fastify';
import { createTransport } from 'nodemailer';
import { mailLogFields, type Mailer } from './mailer.js';

export interface SmtpMailerOptions {
  /** smtp://user:pass@host:port or smtps://… (credentials and TLS come from the URL). */
  url: string;
  from: string;
  log?: Pick<FastifyBaseLogger, 'info'>;
}

/** Nodemailer over SMTP. */
export function createSmtpMailer(options: SmtpMailerOptions): Mailer {
  const transport = createTransport(
    {
      url: options.url,
      // Nodemailer's defaults wait minutes for a silent server (2 min to connect, 10 min idle);
      // the alert worker retries with backoff instead, so give up sooner.
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 30_000,
    },
    { from: options.from },
  );
  return {
    kind: 'smtp',
    async send(message) {
      const info = await transport.sendMail({
        to: message.to,
        subject: message.subject,
        text: message.text,
        ...(message.html ? { html: message.html } : {}),
      });
      // With a single recipient a rejection normally throws; this covers servers that accept the
      // transaction but refuse the address.
      if (info.rejected.length > 0) throw new Error(`SMTP server rejected ${message.to}: ${info.response}`);
      options.log?.info(mailLogFields(message.to, info.messageId), 'e-mail sent');
    },
    async close() {
      transport.close();
    },
  };
}
