import { sql } from 'drizzle-orm';
import { boolean, check, index, integer, jsonb, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { users } from './users.js';
import { marketplaceSchema } from './pg-schema.js';

/**
 * Editorial content (terms, privacy, FAQ…) per key and language, versioned: every PUT adds a
 * version, the previous ones are kept; readers get the highest version of their language.
 */
export const contentVersions = marketplaceSchema.table(
  'content_versions',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    key: text('key').notNull(),
    lang: text('lang').notNull(),
    version: integer('version').notNull(),
    title: text('title').notNull(),
    body: text('body').notNull(),
    createdBy: integer('created_by').references(() => users.id, { onDelete: 'set null' }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('content_versions_key_lang_version_unique').on(t.key, t.lang, t.version.desc()),
    check('content_versions_version_positive', sql`${t.version} >= 1`),
  ],
);

export const BROADCAST_AUDIENCES = ['all', 'clients', 'prestataires'] as const;
export type BroadcastAudience = (typeof BROADCAST_AUDIENCES)[number];
export const BROADCAST_STATUSES = ['queued', 'sending', 'completed', 'failed'] as const;
export type BroadcastStatus = (typeof BROADCAST_STATUSES)[number];

/**
 * A message from the back office to many users: a notification, a push and optionally an e-mail
 * each. Sent in batches by a background job that walks recipients by id from `last_user_id`, so a
 * restart resumes where it stopped and nobody is sent it twice.
 */
export const broadcasts = marketplaceSchema.table(
  'broadcasts',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    audience: text('audience').$type<BroadcastAudience>().notNull(),
    cityId: integer('city_id'),
    title: text('title').notNull(),
    body: text('body').notNull(),
    sendEmail: boolean('send_email').notNull().default(false),
    data: jsonb('data').$type<Record<string, unknown>>(),
    status: text('status').$type<BroadcastStatus>().notNull().default('queued'),
    // The recipients counted when the broadcast was made, and how far the job has gone.
    totalRecipients: integer('total_recipients').notNull().default(0),
    sentCount: integer('sent_count').notNull().default(0),
    lastUserId: integer('last_user_id').notNull().default(0),
    error: text('error'),
    createdBy: integer('created_by').references(() => users.id, { onDelete: 'set null' }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    startedAt: timestamp('started_at', { withTimezone: true }),
    completedAt: timestamp('completed_at', { withTimezone: true }),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('broadcasts_pending_idx').on(t.id).where(sql`${t.status} in ('queued', 'sending')`),
    check('broadcasts_audience_valid', sql`${t.audience} in ('all', 'clients', 'prestataires')`),
    check('broadcasts_status_valid', sql`${t.status} in ('queued', 'sending', 'completed', 'failed')`),
  ],
);

export type ContentVersion = typeof contentVersions.$inferSelect;
export type Broadcast = typeof broadcasts.$inferSelect;
