import { sql } from 'drizzle-orm';
import { check, date, index, integer, text, timestamp } from 'drizzle-orm/pg-core';
import { users } from './users.js';
import { marketplaceSchema } from './pg-schema.js';

export const DOCUMENT_TYPES = ['business_registration', 'insurance', 'identity', 'other'] as const;
export type DocumentType = (typeof DOCUMENT_TYPES)[number];

/**
 * Files about an account: a prestataire's compliance documents (uploaded by itself) and documents
 * an admin files on any user. The file lives in storage under `storage_key`; it is only ever served
 * to admins.
 */
export const documents = marketplaceSchema.table(
  'documents',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    type: text('type').$type<DocumentType>().notNull(),
    storageKey: text('storage_key').notNull(),
    originalName: text('original_name').notNull(),
    mimeType: text('mime_type').notNull(),
    sizeBytes: integer('size_bytes').notNull(),
    expiresOn: date('expires_on', { mode: 'string' }),
    uploadedBy: integer('uploaded_by').references(() => users.id, { onDelete: 'set null' }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('documents_user_idx').on(t.userId, t.createdAt),
    index('documents_expires_idx').on(t.expiresOn),
    check('documents_type_valid', sql`${t.type} in ('business_registration', 'insurance', 'identity', 'other')`),
  ],
);

export type Document = typeof documents.$inferSelect;
