import type { FastifyBaseLogger } from 'fastify';
import { createLogMailer, type Mailer } from './mailer.js';
import { createSmtpMailer } from './smtp.js';

export type { Mailer, MailMessage } from './mailer.js';

/** SMTP when `smtpUrl` is configured, else the built-in mailer that writes to the log. */
export function createMailer(config: { smtpUrl?: string; from: string }, log: Pick<FastifyBaseLogger, 'info'>): Mailer {
  return config.smtpUrl ? createSmtpMailer({ url: config.smtpUrl, from: config.from }) : createLogMailer({ log, from: config.from });
}
