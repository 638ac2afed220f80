import { randomUUID } from 'node:crypto';
import { mailLogFields, type MailTransport, type OutgoingMail } from '@repo/mail';
import type { FastifyBaseLogger } from 'fastify';

export type MailMessage = OutgoingMail;

/** Sends one e-mail; rejects when the message was not accepted, so the caller can retry it. */
export interface Mailer {
  readonly kind: 'smtp' | 'log';
  send(message: MailMessage): Promise<void>;
  /** Releases connections; sending after close is not supported. */
  close(): Promise<void>;
}

/** What the log says of an alert e-mail (@repo/mail): never its subject, body or address, since an alert quotes log lines. */
const logFields = (to: string, messageId?: string) => mailLogFields('alert', to, { messageId });

/** Alerts over SMTP: the message goes to the server, and the log says only that it went. */
export function createSmtpMailer(deps: { transport: MailTransport; log?: Pick<FastifyBaseLogger, 'info'> }): Mailer {
  return {
    kind: 'smtp',
    async send(message) {
      const { messageId } = await deps.transport.send(message);
      deps.log?.info(logFields(message.to, messageId), 'e-mail sent');
    },
    close: () => deps.transport.close(),
  };
}

export interface OutboxEntry extends MailMessage {
  id: string;
  from: string;
  at: Date;
}

/** Messages the built-in mailer keeps at most; the oldest go first. */
export const OUTBOX_LIMIT = 200;

export interface LogMailer extends Mailer {
  readonly kind: 'log';
  /** The latest messages, oldest first: where development and tests read what would have been sent. */
  readonly outbox: readonly OutboxEntry[];
}

/**
 * The built-in mailer (no SMTP_URL, refused in production): the message stays in a bounded
 * in-memory outbox and the log says only that one was kept, so a fresh checkout shows what would
 * have been sent without any mail server, and no log ever holds a message's content.
 */
export function createLogMailer(deps: { log: Pick<FastifyBaseLogger, 'info'>; from: string; limit?: number }): LogMailer {
  const outbox: OutboxEntry[] = [];
  const limit = deps.limit ?? OUTBOX_LIMIT;
  return {
    kind: 'log',
    outbox,
    async send(message) {
      const entry = { ...message, id: randomUUID(), from: deps.from, at: new Date() };
      outbox.push(entry);
      if (outbox.length > limit) outbox.splice(0, outbox.length - limit);
      deps.log.info(logFields(message.to, entry.id), 'e-mail kept in the in-memory outbox (no SMTP_URL configured)');
    },
    async close() {},
  };
}
