import { sessionsTable } from '@repo/auth/sessions';
import { sql } from 'drizzle-orm';
import { check, date, index, integer, jsonb, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { timestamps } from './columns.js';
import { marketplaceSchema } from './pg-schema.js';

export const ROLES = ['client', 'prestataire', 'admin'] as const;
export type Role = (typeof ROLES)[number];
export const USER_STATUSES = ['active', 'suspended', 'banned'] as const;
export type UserStatus = (typeof USER_STATUSES)[number];
export const LANGS = ['fr', 'en'] as const;
export type Lang = (typeof LANGS)[number];
export const KYC_STATUSES = ['none', 'pending', 'verified', 'rejected'] as const;
export type KycStatus = (typeof KYC_STATUSES)[number];

/**
 * Every account: clients, prestataires (with a row in prestataire_profiles) and admins. A deleted
 * account is anonymised in place (`deleted_at` set, personal fields cleared) so that its requests,
 * payments and messages keep a counterpart for the other party and for accounting.
 */
export const users = marketplaceSchema.table(
  'users',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    role: text('role').$type<Role>().notNull(),
    status: text('status').$type<UserStatus>().notNull().default('active'),
    // Stored lower-cased; unique among all accounts (anonymised ones hold a unique placeholder).
    email: text('email').notNull(),
    // Null for accounts created by social sign-in until a password is set.
    passwordHash: text('password_hash'),
    firstName: text('first_name').notNull(),
    lastName: text('last_name').notNull(),
    phone: text('phone'),
    lang: text('lang').$type<Lang>().notNull().default('fr'),
    photoKey: text('photo_key'),
    emailVerifiedAt: timestamp('email_verified_at', { withTimezone: true }),
    // An address the owner asked to move to, until a link sent to it is followed (the e-mail
    // stays the old one meanwhile, so a stolen session alone cannot take the account over).
    pendingEmail: text('pending_email'),
    kycStatus: text('kyc_status').$type<KycStatus>().notNull().default('none'),
    googleSubject: text('google_subject'),
    appleSubject: text('apple_subject'),
    statusReason: text('status_reason'),
    lastLoginAt: timestamp('last_login_at', { withTimezone: true }),
    deletedAt: timestamp('deleted_at', { withTimezone: true }),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('users_email_unique').on(t.email),
    uniqueIndex('users_google_subject_unique').on(t.googleSubject),
    uniqueIndex('users_apple_subject_unique').on(t.appleSubject),
    index('users_role_created_idx').on(t.role, t.createdAt),
    index('users_name_trgm_idx').using('gin', sql`(${t.firstName} || ' ' || ${t.lastName} || ' ' || ${t.email}) gin_trgm_ops`),
    check('users_role_valid', sql`${t.role} in ('client', 'prestataire', 'admin')`),
    check('users_status_valid', sql`${t.status} in ('active', 'suspended', 'banned')`),
    check('users_lang_valid', sql`${t.lang} in ('fr', 'en')`),
    check('users_kyc_status_valid', sql`${t.kycStatus} in ('none', 'pending', 'verified', 'rejected')`),
  ],
);

/** Server-side sessions behind bearer tokens (the JWT's `sid`); the table is @repo/auth's. */
export const sessions = sessionsTable({ schema: marketplaceSchema, userId: () => users.id, userIndexName: 'sessions_user_idx', ipRequired: true });

export const TOKEN_PURPOSES = [
  'email_verification_link',
  'email_verification_otp',
  'password_reset_link',
  'password_reset_otp',
  'password_reset_grant',
  // Sent to the new address of an e-mail change; confirming it makes the change.
  'email_change_confirm',
  // Sent to the former address: undoes the change and locks the account until a password reset.
  'email_change_revert',
] as const;
export type TokenPurpose = (typeof TOKEN_PURPOSES)[number];

/**
 * One-time codes and link tokens, stored as SHA-256 hashes. One live row per user and purpose:
 * issuing a new one replaces the old.
 */
export const userTokens = marketplaceSchema.table(
  'user_tokens',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    purpose: text('purpose').$type<TokenPurpose>().notNull(),
    tokenHash: text('token_hash').notNull(),
    attempts: integer('attempts').notNull().default(0),
    // The address an e-mail change token is about: the new one to confirm, the former one to restore.
    email: text('email'),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    usedAt: timestamp('used_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('user_tokens_user_purpose_unique').on(t.userId, t.purpose), index('user_tokens_hash_idx').on(t.tokenHash)],
);

export const DEVICE_KINDS = ['webpush', 'fcm', 'apns'] as const;
export type DeviceKind = (typeof DEVICE_KINDS)[number];

/** Push targets: a web-push subscription (endpoint + keys) or a mobile token; one row per target. */
export const deviceTokens = marketplaceSchema.table(
  'device_tokens',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    kind: text('kind').$type<DeviceKind>().notNull(),
    // The web-push endpoint URL, or the FCM/APNs token.
    token: text('token').notNull(),
    keys: jsonb('keys').$type<{ p256dh: string; auth: string }>(),
    platform: text('platform'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('device_tokens_target_unique').on(t.kind, t.token), index('device_tokens_user_idx').on(t.userId)],
);

/** A client's identity check (`POST /client/kyc/validate`): what was submitted and what the verifier said. */
export const kycVerifications = marketplaceSchema.table(
  'kyc_verifications',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    firstName: text('first_name').notNull(),
    lastName: text('last_name').notNull(),
    birthDate: date('birth_date', { mode: 'string' }).notNull(),
    documentType: text('document_type').notNull(),
    // Only the last four characters of the document number are kept.
    documentNumberLast4: text('document_number_last4').notNull(),
    nationality: text('nationality'),
    verifier: text('verifier').notNull(),
    status: text('status').$type<KycStatus>().notNull(),
    reasons: jsonb('reasons').$type<string[]>().notNull().default([]),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('kyc_verifications_user_idx').on(t.userId, t.createdAt)],
);

/** A client's favourite prestataires. */
export const favourites = marketplaceSchema.table(
  'favourites',
  {
    clientId: integer('client_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    prestataireId: integer('prestataire_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.clientId, t.prestataireId] }), index('favourites_prestataire_idx').on(t.prestataireId)],
);

export type User = typeof users.$inferSelect;
export type NewUser = typeof users.$inferInsert;
