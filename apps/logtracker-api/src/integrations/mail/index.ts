import { smtpTransportFor } from '@repo/mail';
import type { FastifyBaseLogger } from 'fastify';
import { createLogMailer, createSmtpMailer, type Mailer } from './mailer.js';

export type { LogMailer, Mailer, MailMessage, OutboxEntry } from './mailer.js';

/**
 * SMTP when `smtpUrl` is configured, else the built-in mailer that keeps messages in memory;
 * in production there is no built-in mailer, and a missing SMTP server stops start-up.
 */
export function createMailer(config: { smtpUrl?: string; from: string; production?: boolean }, log: Pick<FastifyBaseLogger, 'info'>): Mailer {
  const transport = smtpTransportFor(config);
  return transport ? createSmtpMailer({ transport, log }) : createLogMailer({ log, from: config.from });
}
