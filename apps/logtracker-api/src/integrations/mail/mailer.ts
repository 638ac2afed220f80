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
 * The built-in mailer (no SMTP_URL): the message goes to the application log, so a fresh checkout
 * shows what would have been sent without any mail server.
 */
export function createLogMailer(deps: { log: Pick<FastifyBaseLogger, 'info'>; from: string }): Mailer {
  return {
    kind: 'log',
    async send(message) {
      deps.log.info(
        { mail: { from: deps.from, to: message.to, subject: message.subject, text: message.text } },
        'e-mail not sent (no SMTP_URL configured): written to the log instead',
      );
    },
    async close() {},
  };
}
