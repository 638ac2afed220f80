import { iso, storableText, UNSTORABLE_TEXT_MESSAGE, paginationQuery, timestamp } from '@repo/schemas';
import { z } from 'zod';
import { VEHICLE_CATEGORIES, type TariffGrid } from '../../db/schema/index.js';

// INSEE region codes: two digits (01–06 overseas, 11–94 metropolitan).
const regionCode = z.string().regex(/^\d{2}$/, 'Must be an INSEE region code (two digits)');

export const TariffGridBody = z.object({
  name: z.string().trim().min(2).max(120).refine(storableText, UNSTORABLE_TEXT_MESSAGE),
  vehicle_category: z.enum(VEHICLE_CATEGORIES),
  region_code: regionCode.nullish(),
  hourly_rate_cents: z.number().int().min(1).max(100_000),
  active: z.boolean().optional(),
});
export type TariffGridBody = z.infer<typeof TariffGridBody>;
export const TariffGridPatch = TariffGridBody.partial();
export type TariffGridPatch = z.infer<typeof TariffGridPatch>;

export const TariffGridParams = z.object({ tariff_grid: z.coerce.number().int().min(1).max(2_147_483_647) });

export const TariffGridQuery = paginationQuery({ defaultPerPage: 50, maxPerPage: 100 }).extend({
  vehicle_category: z.enum(VEHICLE_CATEGORIES).optional(),
  region_code: regionCode.optional(),
  active: z.enum(['true', 'false']).transform((v) => v === 'true').optional(),
});

export const TariffGridResponse = z.object({
  id: z.number().int(),
  name: z.string(),
  vehicle_category: z.enum(VEHICLE_CATEGORIES),
  region_code: z.string().nullable(),
  hourly_rate_cents: z.number().int(),
  currency: z.string(),
  active: z.boolean(),
  created_at: timestamp,
  updated_at: timestamp,
});

export function presentTariffGrid(g: TariffGrid): z.infer<typeof TariffGridResponse> {
  return {
    id: g.id,
    name: g.name,
    vehicle_category: g.vehicleCategory,
    region_code: g.regionCode,
    hourly_rate_cents: g.hourlyRateCents,
    currency: g.currency,
    active: g.active,
    created_at: iso(g.createdAt),
    updated_at: iso(g.updatedAt),
  };
}
