import { ConfigError } from '@repo/config';
import type { FastifyBaseLogger } from 'fastify';
import { createLogMailer, type Mailer } from './mailer.js';
import { createSmtpMailer } from './smtp.js';

export type { LogMailer, Mailer, MailMessage, OutboxEntry } from './mailer.js';

/**
 * SMTP when `smtpUrl` is configured, else the built-in mailer that keeps messages in memory;
 * in production there is no built-in mailer, and a missing SMTP server stops start-up.
 */
export function createMailer(config: { smtpUrl?: string; from: string; production?: boolean }, log: Pick<FastifyBaseLogger, 'info'>): Mailer {
  if (config.smtpUrl) return createSmtpMailer({ url: config.smtpUrl, from: config.from, log });
  if (config.production) {
    throw new ConfigError('Invalid configuration:\n  SMTP_URL: required in production (NODE_ENV=production); e-mails are never written to the log');
  }
  return createLogMailer({ log, from: config.from });
}
