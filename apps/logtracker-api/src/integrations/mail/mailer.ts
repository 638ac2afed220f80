import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html?: string;
}

/** Sends one e-mail; rejects when the message was not accepted, so the caller can retry it. */
export interface Mailer {
  readonly kind: 'smtp' | 'log';
  send(message: MailMessage): Promise<void>;
  /** Releases connections; sending after close is not supported. */
  close(): Promise<void>;
}

/**
 * What a log line may say of an e-mail: its kind, the recipient's domain and the message's id.
 * Never the subject, the body or the address: an alert quotes log lines, which may hold secrets.
 */
export function mailLogFields(to: string, messageId?: string) {
  const at = to.lastIndexOf('@');
  return {
    mail: { template: 'alert', to_domain: at >= 0 ? to.slice(at + 1) : '(none)', ...(messageId ? { message_id: messageId } : {}) },
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
      deps.log.info(mailLogFields(message.to, entry.id), 'e-mail kept in the in-memory outbox (no SMTP_URL configured)');
    },
    async close() {},
  };
}
