import { sql } from 'drizzle-orm';
import { check, index, integer, smallint, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { timestamps } from './columns.js';
import { appointments } from './booking.js';
import { users } from './users.js';
import { marketplaceSchema } from './pg-schema.js';

export const REVIEW_STATUSES = ['pending', 'approved', 'rejected', 'hidden'] as const;
export type ReviewStatus = (typeof REVIEW_STATUSES)[number];

/**
 * A client's review of a completed appointment: one per appointment. Moderated (DESIGN.md §6):
 * `pending` → `approved` | `rejected`, `approved` → `hidden`. Only approved reviews are public and
 * count in the prestataire's `rating_average` / `rating_count`.
 */
export const reviews = marketplaceSchema.table(
  'reviews',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    appointmentId: integer('appointment_id')
      .notNull()
      .references(() => appointments.id, { onDelete: 'cascade' }),
    clientId: integer('client_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    prestataireId: integer('prestataire_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    rating: smallint('rating').notNull(),
    comment: text('comment').notNull(),
    status: text('status').$type<ReviewStatus>().notNull().default('pending'),
    moderatedBy: integer('moderated_by').references(() => users.id, { onDelete: 'set null' }),
    moderatedAt: timestamp('moderated_at', { withTimezone: true }),
    rejectionReason: text('rejection_reason'),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('reviews_appointment_unique').on(t.appointmentId),
    // The public list: a prestataire's approved reviews, newest first.
    index('reviews_prestataire_status_idx').on(t.prestataireId, t.status, t.createdAt.desc()),
    // The moderation queue.
    index('reviews_status_created_idx').on(t.status, t.createdAt.desc()),
    check('reviews_rating_valid', sql`${t.rating} between 1 and 5`),
    check('reviews_status_valid', sql`${t.status} in ('pending', 'approved', 'rejected', 'hidden')`),
  ],
);

export type Review = typeof reviews.$inferSelect;
export type NewReview = typeof reviews.$inferInsert;
