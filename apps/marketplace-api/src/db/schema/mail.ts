import { sql } from 'drizzle-orm';
import { check, index, integer, text, timestamp } from 'drizzle-orm/pg-core';
import { marketplaceSchema } from './pg-schema.js';

export const MAIL_STATUSES = ['logged', 'sent', 'failed'] as const;
export type MailStatus = (typeof MAIL_STATUSES)[number];

/**
 * Every e-mail the marketplace sends: `sent` through SMTP, `failed` with the server's answer, or
 * `logged` when no SMTP server is configured (the built-in mailer).
 */
export const mailOutbox = marketplaceSchema.table(
  'mail_outbox',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    template: text('template').notNull(),
    lang: text('lang').notNull(),
    to: text('to').notNull(),
    subject: text('subject').notNull(),
    text: text('text').notNull(),
    html: text('html'),
    status: text('status').$type<MailStatus>().notNull(),
    error: text('error'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    sentAt: timestamp('sent_at', { withTimezone: true }),
  },
  (t) => [
    index('mail_outbox_created_idx').on(t.createdAt),
    index('mail_outbox_to_idx').on(t.to, t.createdAt),
    check('mail_outbox_status_valid', sql`${t.status} in ('logged', 'sent', 'failed')`),
  ],
);

export type MailOutboxEntry = typeof mailOutbox.$inferSelect;
