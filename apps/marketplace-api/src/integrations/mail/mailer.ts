import { ConfigError } from '@repo/config';
import type { FastifyBaseLogger } from 'fastify';
import type { DbTx } from '../../db/index.js';
import { mailOutbox, type Lang } from '../../db/schema/index.js';
import { toHtml, toText, type MailTemplate } from './templates.js';
import { createSmtpTransport, type MailTransport } from './transport.js';

/** The SMTP reply code or nodemailer's error code of a failed send, for the log. */
function smtpCode(error: unknown): string | number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { responseCode, code } = error as { responseCode?: unknown; code?: unknown };
  if (typeof responseCode === 'number') return responseCode;
  return typeof code === 'string' ? code : undefined;
}

export interface Mailer {
  readonly kind: 'smtp' | 'log';
  /**
   * Renders a template in the recipient's language, records it in the outbox and sends it in the
   * background: a request never waits on the mail server, and never answers faster or slower
   * depending on whether an e-mail went out (which would tell who has an account).
   */
  send<V>(template: MailTemplate<V>, to: { email: string; lang: Lang }, vars: V): void;
  /** Resolves when every message handed over so far has been sent or has failed (tests, shutdown). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

/**
 * What a log line may say of an e-mail: the template, the recipient's domain and the message's id.
 * Never the body, the subject or the address: they carry reset links, codes and personal data,
 * and logs are kept longer and read by more people than the mailbox they were meant for.
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

export function createMailer(deps: {
  db: DbTx;
  log: Pick<FastifyBaseLogger, 'info' | 'error'>;
  smtpUrl?: string;
  from: string;
  transport?: MailTransport;
  /** In production there is no built-in mailer: a missing SMTP server is a configuration error. */
  production?: boolean;
}): Mailer {
  const transport = deps.transport ?? (deps.smtpUrl ? createSmtpTransport({ url: deps.smtpUrl, from: deps.from }) : undefined);
  if (!transport && deps.production) {
    throw new ConfigError('Invalid configuration:\n  SMTP_URL: required in production (NODE_ENV=production); e-mails are never written to the log');
  }
  const pending = new Set<Promise<void>>();

  async function record(values: typeof mailOutbox.$inferInsert) {
    const [row] = await deps.db.insert(mailOutbox).values(values).returning({ id: mailOutbox.id });
    return row?.id;
  }

  async function deliver<V>(template: MailTemplate<V>, to: { email: string; lang: Lang }, vars: V) {
    const rendered = template.render[to.lang](vars);
    const message = { to: to.email, subject: rendered.subject, text: toText(rendered), html: toHtml(rendered, to.lang) };
    if (!transport) {
      // Development and tests read the message in the outbox table; the log only says it is there.
      const outboxId = await record({ template: template.name, lang: to.lang, ...message, status: 'logged' });
      deps.log.info(mailLogFields(template.name, message.to, { outboxId }), 'e-mail kept in the outbox (no SMTP_URL configured)');
      return;
    }
    try {
      const { messageId } = await transport.send(message);
      const outboxId = await record({ template: template.name, lang: to.lang, ...message, status: 'sent', sentAt: new Date() });
      deps.log.info(mailLogFields(template.name, message.to, { outboxId, messageId }), 'e-mail sent');
    } catch (error) {
      const reason = error instanceof Error ? error.message.slice(0, 1000) : String(error);
      const outboxId = await record({ template: template.name, lang: to.lang, ...message, status: 'failed', error: reason });
      // The server's answer, not the error object: a transport error may quote the message it refused.
      deps.log.error({ ...mailLogFields(template.name, message.to, { outboxId }), smtp_code: smtpCode(error) }, 'e-mail not accepted by the SMTP server');
    }
  }

  return {
    kind: transport ? 'smtp' : 'log',
    send(template, to, vars) {
      const task = deliver(template, to, vars)
        .catch((error: unknown) =>
          deps.log.error({ ...mailLogFields(template.name, to.email), error: error instanceof Error ? error.name : 'unknown' }, 'e-mail could not be recorded'),
        )
        .finally(() => pending.delete(task));
      pending.add(task);
    },
    async idle() {
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },
    async close() {
      while (pending.size > 0) await Promise.allSettled([...pending]);
      await transport?.close();
    },
  };
}
