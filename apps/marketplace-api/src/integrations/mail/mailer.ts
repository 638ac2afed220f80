import { mailLogFields, smtpCode, smtpTransportFor, type MailTransport } from '@repo/mail';
import type { FastifyBaseLogger } from 'fastify';
import type { DbTx } from '../../db/index.js';
import { mailOutbox, type Lang } from '../../db/schema/index.js';
import { toHtml, toText, type MailTemplate } from './templates.js';

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

export function createMailer(deps: {
  db: DbTx;
  log: Pick<FastifyBaseLogger, 'info' | 'error'>;
  smtpUrl?: string;
  from: string;
  transport?: MailTransport;
  /** In production there is no built-in mailer: a missing SMTP server is a configuration error. */
  production?: boolean;
}): Mailer {
  const transport = deps.transport ?? smtpTransportFor(deps);
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
