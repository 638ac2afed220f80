import { sql } from 'drizzle-orm';
import {
  check,
  customType,
  doublePrecision,
  index,
  integer,
  primaryKey,
  real,
  smallint,
  text,
  time,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { cities, services } from './catalogue.js';
import { timestamps } from './columns.js';
import { users } from './users.js';
import { marketplaceSchema } from './pg-schema.js';

/**
 * earthdistance's `earth` (a point on the sphere as a 3-D cube). Read and written by PostgreSQL
 * only: the application never handles its text form.
 */
const earth = customType<{ data: string; driverData: string }>({ dataType: () => 'earth' });

export const VALIDATION_STATUSES = ['pending', 'validated', 'rejected', 'documents_requested', 'suspended'] as const;
export type ValidationStatus = (typeof VALIDATION_STATUSES)[number];

/**
 * A prestataire's business. Only `validated` profiles of active users appear in search, receive
 * requests and may make offers. The rating is kept up by review moderation (approved reviews only).
 */
export const prestataireProfiles = marketplaceSchema.table(
  'prestataire_profiles',
  {
    userId: integer('user_id')
      .primaryKey()
      .references(() => users.id, { onDelete: 'cascade' }),
    businessName: text('business_name').notNull(),
    siret: text('siret').notNull(),
    description: text('description'),
    address: text('address').notNull(),
    postalCode: text('postal_code').notNull(),
    city: text('city').notNull(),
    cityId: integer('city_id').references(() => cities.id, { onDelete: 'set null' }),
    latitude: doublePrecision('latitude'),
    longitude: doublePrecision('longitude'),
    // The point the radius search reads, computed once when the coordinates change rather than for
    // every candidate row of every search (null without coordinates).
    location: earth('location').generatedAlwaysAs(sql`ll_to_earth(latitude, longitude)`),
    serviceRadiusKm: integer('service_radius_km').notNull().default(30),
    timezone: text('timezone').notNull().default('Europe/Paris'),
    hourlyRateCents: integer('hourly_rate_cents'),
    // Shown publicly only when set here; the account's own phone stays private.
    publicPhone: text('public_phone'),
    website: text('website'),
    validationStatus: text('validation_status').$type<ValidationStatus>().notNull().default('pending'),
    validationNote: text('validation_note'),
    validatedAt: timestamp('validated_at', { withTimezone: true }),
    suspendedAt: timestamp('suspended_at', { withTimezone: true }),
    ratingAverage: real('rating_average'),
    ratingCount: integer('rating_count').notNull().default(0),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('prestataire_profiles_siret_unique').on(t.siret),
    index('prestataire_profiles_status_idx').on(t.validationStatus),
    index('prestataire_profiles_city_idx').on(t.cityId),
    index('prestataire_profiles_name_trgm_idx').using('gin', sql`${t.businessName} gin_trgm_ops`),
    // The radius search's earth_box(…) @> location (earthdistance) reads this index instead of
    // computing a distance for every validated profile.
    index('prestataire_profiles_location_idx').using('gist', t.location),
    check(
      'prestataire_profiles_status_valid',
      sql`${t.validationStatus} in ('pending', 'validated', 'rejected', 'documents_requested', 'suspended')`,
    ),
    check('prestataire_profiles_radius_valid', sql`${t.serviceRadiusKm} between 1 and 500`),
    check('prestataire_profiles_rate_nonnegative', sql`${t.hourlyRateCents} is null or ${t.hourlyRateCents} >= 0`),
  ],
);

/** The services a prestataire offers, with its own price and duration where it sets them. */
export const prestataireServices = marketplaceSchema.table(
  'prestataire_services',
  {
    prestataireId: integer('prestataire_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    serviceId: integer('service_id')
      .notNull()
      .references(() => services.id, { onDelete: 'cascade' }),
    priceCents: integer('price_cents'),
    durationMinutes: integer('duration_minutes'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.prestataireId, t.serviceId] }),
    index('prestataire_services_service_idx').on(t.serviceId),
    check('prestataire_services_price_nonnegative', sql`${t.priceCents} is null or ${t.priceCents} >= 0`),
  ],
);

/** Photos of a prestataire's work, public on its page. */
export const galleryPhotos = marketplaceSchema.table(
  'gallery_photos',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    prestataireId: integer('prestataire_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    storageKey: text('storage_key').notNull(),
    caption: text('caption'),
    position: integer('position').notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('gallery_photos_prestataire_idx').on(t.prestataireId, t.position)],
);

/** Weekly opening hours: wall-clock times in the prestataire's time zone, ISO weekday 1 = Monday. */
export const availabilities = marketplaceSchema.table(
  'availabilities',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    prestataireId: integer('prestataire_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    dayOfWeek: smallint('day_of_week').notNull(),
    startTime: time('start_time').notNull(),
    endTime: time('end_time').notNull(),
  },
  (t) => [
    index('availabilities_prestataire_idx').on(t.prestataireId, t.dayOfWeek),
    check('availabilities_day_valid', sql`${t.dayOfWeek} between 1 and 7`),
    check('availabilities_range_valid', sql`${t.startTime} < ${t.endTime}`),
  ],
);

export type PrestataireProfile = typeof prestataireProfiles.$inferSelect;
