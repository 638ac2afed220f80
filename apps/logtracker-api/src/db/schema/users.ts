import { sessionsTable } from '@repo/auth/sessions';
import { integer, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { timestamps } from './columns.js';
import { logtrackerSchema } from './pg-schema.js';

export const users = logtrackerSchema.table(
  'users',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    name: text('name').notNull(),
    // Stored lower-cased by the service, so the unique index is case-insensitive in effect.
    email: text('email').notNull(),
    passwordHash: text('password_hash').notNull(),
    ...timestamps,
  },
  (t) => [uniqueIndex('users_email_unique').on(t.email)],
);

/** Server-side sessions behind bearer tokens (the JWT's `sid`); the table is @repo/auth's. */
export const sessions = sessionsTable({ schema: logtrackerSchema, userId: () => users.id, userIndexName: 'sessions_user_id_idx', ipRequired: false });

export type User = typeof users.$inferSelect;
