import { sql } from 'drizzle-orm';
import { boolean, check, doublePrecision, index, integer, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { timestamps } from './columns.js';
import { marketplaceSchema } from './pg-schema.js';

export const serviceCategories = marketplaceSchema.table(
  'service_categories',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    slug: text('slug').notNull(),
    name: text('name').notNull(),
    description: text('description'),
    icon: text('icon'),
    position: integer('position').notNull().default(0),
    ...timestamps,
  },
  (t) => [uniqueIndex('service_categories_slug_unique').on(t.slug)],
);

/** What prestataires offer and clients ask for; the indicative price is in cents. */
export const services = marketplaceSchema.table(
  'services',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    categoryId: integer('category_id')
      .notNull()
      .references(() => serviceCategories.id, { onDelete: 'restrict' }),
    slug: text('slug').notNull(),
    name: text('name').notNull(),
    description: text('description'),
    durationMinutes: integer('duration_minutes').notNull(),
    priceCents: integer('price_cents'),
    currency: text('currency').notNull().default('EUR'),
    position: integer('position').notNull().default(0),
    active: boolean('active').notNull().default(true),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('services_slug_unique').on(t.slug),
    index('services_category_idx').on(t.categoryId, t.position),
    check('services_duration_positive', sql`${t.durationMinutes} > 0`),
    check('services_price_nonnegative', sql`${t.priceCents} is null or ${t.priceCents} >= 0`),
  ],
);

/**
 * French communes (INSEE code) with their postal codes and the coordinates of their centre,
 * seeded from the official administrative dataset joined with GeoNames coordinates.
 */
export const cities = marketplaceSchema.table(
  'cities',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    inseeCode: text('insee_code').notNull(),
    name: text('name').notNull(),
    postalCodes: text('postal_codes').array().notNull(),
    departmentCode: text('department_code').notNull(),
    regionCode: text('region_code'),
    population: integer('population'),
    latitude: doublePrecision('latitude').notNull(),
    longitude: doublePrecision('longitude').notNull(),
  },
  (t) => [
    uniqueIndex('cities_insee_unique').on(t.inseeCode),
    index('cities_name_trgm_idx').using('gin', sql`${t.name} gin_trgm_ops`),
    index('cities_postal_codes_idx').using('gin', t.postalCodes),
  ],
);

export type ServiceCategory = typeof serviceCategories.$inferSelect;
export type Service = typeof services.$inferSelect;
export type City = typeof cities.$inferSelect;
