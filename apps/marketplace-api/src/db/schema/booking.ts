import { sql } from 'drizzle-orm';
import { check, doublePrecision, index, integer, jsonb, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { cities, services } from './catalogue.js';
import { timestamps } from './columns.js';
import { users } from './users.js';
import { vehicles } from './vehicles.js';
import { marketplaceSchema } from './pg-schema.js';

export const SERVICE_REQUEST_STATUSES = ['open', 'quoted', 'accepted', 'completed', 'cancelled', 'expired', 'refused'] as const;
export type ServiceRequestStatus = (typeof SERVICE_REQUEST_STATUSES)[number];

export const OFFER_STATUSES = ['pending', 'accepted', 'refused', 'withdrawn', 'expired'] as const;
export type OfferStatus = (typeof OFFER_STATUSES)[number];

export const APPOINTMENT_STATUSES = ['scheduled', 'in_progress', 'ended', 'completed', 'cancelled'] as const;
export type AppointmentStatus = (typeof APPOINTMENT_STATUSES)[number];
/** The appointments that hold their prestataire's time (the exclusion constraint's predicate). */
export const ACTIVE_APPOINTMENT_STATUSES = ['scheduled', 'in_progress'] as const;

export const PRICE_ADJUSTMENT_STATUSES = ['pending', 'accepted', 'rejected'] as const;
export type PriceAdjustmentStatus = (typeof PRICE_ADJUSTMENT_STATUSES)[number];

/**
 * A client's need for a service on one of its vehicles, where it is (coordinates). Open to every
 * prestataire offering the service within its radius, or aimed at one (`prestataire_id`, a direct
 * request). DESIGN.md §6 gives its states.
 */
export const serviceRequests = marketplaceSchema.table(
  'service_requests',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    clientId: integer('client_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    vehicleId: integer('vehicle_id')
      .notNull()
      .references(() => vehicles.id, { onDelete: 'restrict' }),
    serviceId: integer('service_id')
      .notNull()
      .references(() => services.id, { onDelete: 'restrict' }),
    // A direct request names its prestataire; the others are open to all nearby.
    prestataireId: integer('prestataire_id').references(() => users.id, { onDelete: 'set null' }),
    description: text('description').notNull(),
    latitude: doublePrecision('latitude').notNull(),
    longitude: doublePrecision('longitude').notNull(),
    cityId: integer('city_id').references(() => cities.id, { onDelete: 'set null' }),
    // Instants the client would like, as ISO strings.
    preferredDates: jsonb('preferred_dates').$type<string[]>().notNull().default([]),
    status: text('status').$type<ServiceRequestStatus>().notNull().default('open'),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    acceptedAt: timestamp('accepted_at', { withTimezone: true }),
    cancelledAt: timestamp('cancelled_at', { withTimezone: true }),
    cancelledBy: integer('cancelled_by').references(() => users.id, { onDelete: 'set null' }),
    cancelReason: text('cancel_reason'),
    refusalReason: text('refusal_reason'),
    ...timestamps,
  },
  (t) => [
    index('service_requests_client_idx').on(t.clientId, t.createdAt.desc()),
    index('service_requests_prestataire_idx').on(t.prestataireId, t.status),
    index('service_requests_service_status_idx').on(t.serviceId, t.status),
    // Statistics and the admin dashboard count requests by creation time.
    index('service_requests_created_idx').on(t.createdAt),
    // The expiry timer's scan.
    index('service_requests_expiry_idx').on(t.expiresAt).where(sql`${t.status} in ('open', 'quoted')`),
    // Open requests within a prestataire's radius (earth_box … @> ll_to_earth(…)).
    index('service_requests_location_idx')
      .using('gist', sql`ll_to_earth(${t.latitude}, ${t.longitude})`)
      .where(sql`${t.status} in ('open', 'quoted')`),
    check(
      'service_requests_status_valid',
      sql`${t.status} in ('open', 'quoted', 'accepted', 'completed', 'cancelled', 'expired', 'refused')`,
    ),
    check('service_requests_latitude_valid', sql`${t.latitude} between -90 and 90`),
    check('service_requests_longitude_valid', sql`${t.longitude} between -180 and 180`),
  ],
);

/** Photos a client attaches to a request (the damage, the dashboard light). */
export const serviceRequestPhotos = marketplaceSchema.table(
  'service_request_photos',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    serviceRequestId: integer('service_request_id')
      .notNull()
      .references(() => serviceRequests.id, { onDelete: 'cascade' }),
    storageKey: text('storage_key').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('service_request_photos_request_idx').on(t.serviceRequestId)],
);

/** A prestataire's quote for a request: a price, a proposed start and a duration. */
export const offers = marketplaceSchema.table(
  'offers',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    serviceRequestId: integer('service_request_id')
      .notNull()
      .references(() => serviceRequests.id, { onDelete: 'cascade' }),
    prestataireId: integer('prestataire_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    amountCents: integer('amount_cents').notNull(),
    proposedStartAt: timestamp('proposed_start_at', { withTimezone: true }).notNull(),
    durationMinutes: integer('duration_minutes').notNull(),
    message: text('message'),
    validUntil: timestamp('valid_until', { withTimezone: true }).notNull(),
    status: text('status').$type<OfferStatus>().notNull().default('pending'),
    decidedAt: timestamp('decided_at', { withTimezone: true }),
    ...timestamps,
  },
  (t) => [
    index('offers_request_idx').on(t.serviceRequestId, t.createdAt),
    index('offers_prestataire_idx').on(t.prestataireId, t.status, t.createdAt.desc()),
    // One live offer per prestataire per request.
    uniqueIndex('offers_one_pending_unique').on(t.serviceRequestId, t.prestataireId).where(sql`${t.status} = 'pending'`),
    index('offers_expiry_idx').on(t.validUntil).where(sql`${t.status} = 'pending'`),
    check('offers_status_valid', sql`${t.status} in ('pending', 'accepted', 'refused', 'withdrawn', 'expired')`),
    check('offers_amount_positive', sql`${t.amountCents} > 0`),
    check('offers_duration_valid', sql`${t.durationMinutes} between 15 and 1440`),
  ],
);

/**
 * The work booked: one per accepted request. `starts_at`/`ends_at` are UTC instants; two active
 * appointments of one prestataire never overlap (the exclusion constraint of migration 0009).
 */
export const appointments = marketplaceSchema.table(
  'appointments',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    serviceRequestId: integer('service_request_id')
      .notNull()
      .references(() => serviceRequests.id, { onDelete: 'restrict' }),
    offerId: integer('offer_id').references(() => offers.id, { onDelete: 'set null' }),
    clientId: integer('client_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    prestataireId: integer('prestataire_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    vehicleId: integer('vehicle_id')
      .notNull()
      .references(() => vehicles.id, { onDelete: 'restrict' }),
    serviceId: integer('service_id')
      .notNull()
      .references(() => services.id, { onDelete: 'restrict' }),
    startsAt: timestamp('starts_at', { withTimezone: true }).notNull(),
    endsAt: timestamp('ends_at', { withTimezone: true }).notNull(),
    priceCents: integer('price_cents').notNull(),
    currency: text('currency').notNull().default('EUR'),
    status: text('status').$type<AppointmentStatus>().notNull().default('scheduled'),
    startedAt: timestamp('started_at', { withTimezone: true }),
    endedAt: timestamp('ended_at', { withTimezone: true }),
    completedAt: timestamp('completed_at', { withTimezone: true }),
    // Set by the payments module when the client's payment succeeds; auto-completion counts from it.
    paidAt: timestamp('paid_at', { withTimezone: true }),
    cancelledAt: timestamp('cancelled_at', { withTimezone: true }),
    cancelledBy: integer('cancelled_by').references(() => users.id, { onDelete: 'set null' }),
    cancelReason: text('cancel_reason'),
    cancellationFeeCents: integer('cancellation_fee_cents'),
    priceAdjustmentAmountCents: integer('price_adjustment_amount_cents'),
    priceAdjustmentReason: text('price_adjustment_reason'),
    priceAdjustmentStatus: text('price_adjustment_status').$type<PriceAdjustmentStatus>(),
    priceAdjustmentRequestedAt: timestamp('price_adjustment_requested_at', { withTimezone: true }),
    notes: jsonb('notes').$type<Record<string, unknown>>(),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('appointments_request_unique').on(t.serviceRequestId),
    index('appointments_client_idx').on(t.clientId, t.startsAt.desc()),
    index('appointments_prestataire_idx').on(t.prestataireId, t.startsAt),
    index('appointments_status_idx').on(t.status, t.startsAt),
    // Statistics and the admin dashboard count bookings by creation time, completions by completion time.
    index('appointments_created_idx').on(t.createdAt),
    index('appointments_completed_idx').on(t.completedAt).where(sql`${t.completedAt} is not null`),
    // The auto-completion timer's scan.
    index('appointments_autocomplete_idx').on(t.paidAt).where(sql`${t.status} = 'ended' and ${t.paidAt} is not null`),
    check('appointments_status_valid', sql`${t.status} in ('scheduled', 'in_progress', 'ended', 'completed', 'cancelled')`),
    check('appointments_range_valid', sql`${t.endsAt} > ${t.startsAt}`),
    check('appointments_price_nonnegative', sql`${t.priceCents} >= 0`),
    check(
      'appointments_adjustment_valid',
      sql`${t.priceAdjustmentStatus} is null or (${t.priceAdjustmentStatus} in ('pending', 'accepted', 'rejected') and ${t.priceAdjustmentAmountCents} >= 0)`,
    ),
  ],
);

export type ServiceRequest = typeof serviceRequests.$inferSelect;
export type ServiceRequestPhoto = typeof serviceRequestPhotos.$inferSelect;
export type Offer = typeof offers.$inferSelect;
export type Appointment = typeof appointments.$inferSelect;
