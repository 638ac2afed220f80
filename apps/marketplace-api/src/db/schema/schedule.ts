import { sql } from 'drizzle-orm';
import { check, date, index, integer, text, timestamp } from 'drizzle-orm/pg-core';
import { timestamps } from './columns.js';
import { users } from './users.js';
import { marketplaceSchema } from './pg-schema.js';

/** A prestataire away for a range of time (instants, UTC): no slot is offered inside it. */
export const absences = marketplaceSchema.table(
  'absences',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    prestataireId: integer('prestataire_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    startsAt: timestamp('starts_at', { withTimezone: true }).notNull(),
    endsAt: timestamp('ends_at', { withTimezone: true }).notNull(),
    reason: text('reason'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('absences_prestataire_idx').on(t.prestataireId, t.endsAt),
    check('absences_range_valid', sql`${t.endsAt} > ${t.startsAt}`),
  ],
);

/** Whole days closed (local dates in the prestataire's time zone, both inclusive). */
export const closures = marketplaceSchema.table(
  'closures',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    prestataireId: integer('prestataire_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    startDate: date('start_date', { mode: 'string' }).notNull(),
    endDate: date('end_date', { mode: 'string' }).notNull(),
    reason: text('reason'),
    ...timestamps,
  },
  (t) => [
    index('closures_prestataire_idx').on(t.prestataireId, t.endDate),
    check('closures_range_valid', sql`${t.endDate} >= ${t.startDate}`),
  ],
);

export type Absence = typeof absences.$inferSelect;
export type Closure = typeof closures.$inferSelect;
