import { sql } from 'drizzle-orm';
import { boolean, check, index, integer, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { timestamps } from './columns.js';
import { marketplaceSchema } from './pg-schema.js';

export const VEHICLE_CATEGORIES = ['city', 'compact', 'family', 'suv', 'premium', 'utility'] as const;
export type VehicleCategory = (typeof VEHICLE_CATEGORIES)[number];

/**
 * Hourly labour rates by vehicle category and region (INSEE region code; null for the national
 * rate), used for estimates when a prestataire has no rate of its own.
 */
export const tariffGrids = marketplaceSchema.table(
  'tariff_grids',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    name: text('name').notNull(),
    vehicleCategory: text('vehicle_category').$type<VehicleCategory>().notNull(),
    regionCode: text('region_code'),
    hourlyRateCents: integer('hourly_rate_cents').notNull(),
    currency: text('currency').notNull().default('EUR'),
    active: boolean('active').notNull().default(true),
    ...timestamps,
  },
  (t) => [
    // One active rate per category and region: an estimate never has two to choose from.
    uniqueIndex('tariff_grids_active_unique')
      .on(t.vehicleCategory, sql`coalesce(${t.regionCode}, '')`)
      .where(sql`${t.active}`),
    index('tariff_grids_category_idx').on(t.vehicleCategory),
    check('tariff_grids_rate_valid', sql`${t.hourlyRateCents} > 0`),
    check('tariff_grids_category_valid', sql`${t.vehicleCategory} in ('city', 'compact', 'family', 'suv', 'premium', 'utility')`),
  ],
);

export type TariffGrid = typeof tariffGrids.$inferSelect;
