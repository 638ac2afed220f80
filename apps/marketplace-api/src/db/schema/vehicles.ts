import { sql } from 'drizzle-orm';
import { check, index, integer, smallint, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { timestamps } from './columns.js';
import { users } from './users.js';
import { marketplaceSchema } from './pg-schema.js';

export const FUELS = ['petrol', 'diesel', 'hybrid', 'plugin_hybrid', 'electric', 'lpg', 'other'] as const;
export type Fuel = (typeof FUELS)[number];

/**
 * A client's vehicle. Deletion is soft (`deleted_at`): requests and appointments about the vehicle
 * keep it for the other party and for invoices.
 */
export const vehicles = marketplaceSchema.table(
  'vehicles',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    ownerId: integer('owner_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    make: text('make').notNull(),
    model: text('model').notNull(),
    year: smallint('year').notNull(),
    vin: text('vin'),
    // Normalised: `AB-123-CD` or `1234 AB 56`.
    plate: text('plate'),
    fuel: text('fuel').$type<Fuel>(),
    engine: text('engine'),
    mileageKm: integer('mileage_km'),
    nickname: text('nickname'),
    // The repair-data source's id, once identified.
    repairdataVehicleId: text('repairdata_vehicle_id'),
    identifiedAt: timestamp('identified_at', { withTimezone: true }),
    deletedAt: timestamp('deleted_at', { withTimezone: true }),
    ...timestamps,
  },
  (t) => [
    index('vehicles_owner_idx').on(t.ownerId, t.createdAt),
    uniqueIndex('vehicles_owner_vin_unique').on(t.ownerId, t.vin).where(sql`${t.deletedAt} is null and ${t.vin} is not null`),
    uniqueIndex('vehicles_owner_plate_unique').on(t.ownerId, t.plate).where(sql`${t.deletedAt} is null and ${t.plate} is not null`),
    check('vehicles_year_valid', sql`${t.year} between 1900 and 2100`),
    check('vehicles_mileage_valid', sql`${t.mileageKm} is null or ${t.mileageKm} >= 0`),
  ],
);

export type Vehicle = typeof vehicles.$inferSelect;
