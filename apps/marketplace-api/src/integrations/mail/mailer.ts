import type { FastifyBaseLogger } from 'fastify';
import type { DbTx } from '../../db/index.js';
import { mailOutbox, type Lang } from '../../db/schema/index.js';
import { toHtml, toText, type MailTemplate } from './templates.js';
import { createSmtpTransport, type MailTransport } from './transport.js';

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
}): Mailer {
  const transport = deps.transport ?? (deps.smtpUrl ? createSmtpTransport({ url: deps.smtpUrl, from: deps.from }) : undefined);
  const pending = new Set<Promise<void>>();

  async function deliver<V>(template: MailTemplate<V>, to: { email: string; lang: Lang }, vars: V) {
    const rendered = template.render[to.lang](vars);
    const message = { to: to.email, subject: rendered.subject, text: toText(rendered), html: toHtml(rendered, to.lang) };
    if (!transport) {
      deps.log.info({ mail: { template: template.name, to: message.to, subject: message.subject, text: message.text } }, 'e-mail written to the outbox (no SMTP_URL configured)');
      await deps.db.insert(mailOutbox).values({ template: template.name, lang: to.lang, ...message, status: 'logged' });
      return;
    }
    try {
      await transport.send(message);
      await deps.db.insert(mailOutbox).values({ template: template.name, lang: to.lang, ...message, status: 'sent', sentAt: new Date() });
    } catch (error) {
      deps.log.error({ err: error, template: template.name }, 'e-mail not accepted by the SMTP server');
      await deps.db.insert(mailOutbox).values({
        template: template.name,
        lang: to.lang,
        ...message,
        status: 'failed',
        error: error instanceof Error ? error.message.slice(0, 1000) : String(error),
      });
    }
  }

  return {
    kind: transport ? 'smtp' : 'log',
    send(template, to, vars) {
      const task = deliver(template, to, vars)
        .catch((error: unknown) => deps.log.error({ err: error, template: template.name }, 'e-mail could not be recorded'))
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
