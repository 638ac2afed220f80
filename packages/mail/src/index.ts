import { ConfigError } from '@repo/config';
import { createTransport } from 'nodemailer';

/** One e-mail as handed to the server: the apps render their own templates into it. */
export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
  html?: string;
}

/** Hands one message to a mail server; rejects when it was not accepted, so the caller can record or retry it. */
export interface MailTransport {
  readonly kind: 'smtp';
  /** Resolves with the server-assigned Message-ID (safe to log: it names, never quotes, the message). */
  send(message: OutgoingMail): Promise<{ messageId?: string }>;
  /** Releases the connections; sending after close is not supported. */
  close(): Promise<void>;
}

export interface SmtpTransportOptions {
  /** smtp://user:pass@host:port or smtps://… (credentials and TLS come from the URL). */
  url: string;
  /** The From address of every message. */
  from: string;
}

/** Nodemailer over SMTP. */
export function createSmtpTransport(options: SmtpTransportOptions): MailTransport {
  const transport = createTransport(
    {
      url: options.url,
      // Nodemailer's defaults wait minutes for a silent server (2 min to connect, 10 min idle);
      // a request-triggered e-mail should not, and the alert worker retries with backoff instead.
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
      return { messageId: info.messageId };
    },
    async close() {
      transport.close();
    },
  };
}

/**
 * What a log line may say of an e-mail: the template, the recipient's domain and the message's
 * ids. Never the body, the subject or the address: they carry reset links, codes, quoted log lines
 * and personal data, and logs are kept longer and read by more people than the mailbox.
 */
export function mailLogFields(template: string, to: string, ids: { outboxId?: number; messageId?: string } = {}) {
  const at = to.lastIndexOf('@');
  return {
    mail: {
      template,
      to_domain: at >= 0 ? to.slice(at + 1) : '(none)',
      ...(ids.outboxId === undefined ? {} : { outbox_id: ids.outboxId }),
      ...(ids.messageId === undefined ? {} : { message_id: ids.messageId }),
    },
  };
}

/** The SMTP reply code or nodemailer's error code of a failed send, for the log (never the error's text, which may quote the message). */
export function smtpCode(error: unknown): string | number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { responseCode, code } = error as { responseCode?: unknown; code?: unknown };
  if (typeof responseCode === 'number') return responseCode;
  return typeof code === 'string' ? code : undefined;
}

/**
 * The transport a configuration asks for: SMTP when `smtpUrl` is set, else none (the app keeps
 * messages for development and tests to read). In production there is no such fallback: a missing
 * SMTP server stops start-up, since e-mails are never written to the log.
 */
export function smtpTransportFor(config: { smtpUrl?: string; from: string; production?: boolean }): MailTransport | undefined {
  if (config.smtpUrl) return createSmtpTransport({ url: config.smtpUrl, from: config.from });
  if (config.production) {
    throw new ConfigError('Invalid configuration:\n  SMTP_URL: required in production (NODE_ENV=production); e-mails are never written to the log');
  }
  return undefined;
}
