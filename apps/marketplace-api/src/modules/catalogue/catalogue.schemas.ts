import { envelope, id, storableText, UNSTORABLE_TEXT_MESSAGE, paginatedEnvelope, paginationQuery } from '@repo/schemas';
import { z } from 'zod';
import type { City, Service, ServiceCategory } from '../../db/schema/index.js';

const searchText = z.string().trim().min(1, 'Must not be empty').max(100).refine(storableText, UNSTORABLE_TEXT_MESSAGE);

export const ServiceParams = z.object({ service: id });

export const ListServicesQuery = paginationQuery({ defaultPerPage: 50, maxPerPage: 100 }).extend({
  category_id: id.optional(),
  q: searchText.optional(),
});
export type ListServicesQuery = z.infer<typeof ListServicesQuery>;

export const ListCitiesQuery = paginationQuery({ defaultPerPage: 20, maxPerPage: 100 }).extend({
  q: searchText.optional(),
  postal_code: z
    .string()
    .trim()
    .regex(/^\d{1,5}$/, 'Must be a postal code or its first digits')
    .optional(),
});
export type ListCitiesQuery = z.infer<typeof ListCitiesQuery>;

export const CategorySummary = z.object({ id: z.number().int(), slug: z.string(), name: z.string() });

export const CategoryResponse = z.object({
  id: z.number().int(),
  slug: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  icon: z.string().nullable(),
  position: z.number().int(),
  services_count: z.number().int(),
});

export const ServiceResponse = z.object({
  id: z.number().int(),
  slug: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  duration_minutes: z.number().int(),
  price_cents: z.number().int().nullable().describe('Indicative price; each prestataire sets its own'),
  currency: z.string(),
  position: z.number().int(),
  category: CategorySummary,
});

export const CityResponse = z.object({
  id: z.number().int(),
  insee_code: z.string(),
  name: z.string(),
  postal_codes: z.array(z.string()),
  department_code: z.string(),
  region_code: z.string().nullable(),
  population: z.number().int().nullable(),
  latitude: z.number(),
  longitude: z.number(),
});

export const CategoryListEnvelope = envelope(z.array(CategoryResponse));
export const ServiceListEnvelope = paginatedEnvelope(ServiceResponse);
export const ServiceEnvelope = envelope(ServiceResponse);
export const CityListEnvelope = paginatedEnvelope(CityResponse);

export function presentCategorySummary(c: Pick<ServiceCategory, 'id' | 'slug' | 'name'>): z.infer<typeof CategorySummary> {
  return { id: c.id, slug: c.slug, name: c.name };
}

export function presentCategory(c: ServiceCategory, servicesCount: number): z.infer<typeof CategoryResponse> {
  return {
    id: c.id,
    slug: c.slug,
    name: c.name,
    description: c.description,
    icon: c.icon,
    position: c.position,
    services_count: servicesCount,
  };
}

export function presentService(s: Service, category: Pick<ServiceCategory, 'id' | 'slug' | 'name'>): z.infer<typeof ServiceResponse> {
  return {
    id: s.id,
    slug: s.slug,
    name: s.name,
    description: s.description,
    duration_minutes: s.durationMinutes,
    price_cents: s.priceCents,
    currency: s.currency,
    position: s.position,
    category: presentCategorySummary(category),
  };
}

export function presentCity(c: City): z.infer<typeof CityResponse> {
  return {
    id: c.id,
    insee_code: c.inseeCode,
    name: c.name,
    postal_codes: c.postalCodes,
    department_code: c.departmentCode,
    region_code: c.regionCode,
    population: c.population,
    latitude: c.latitude,
    longitude: c.longitude,
  };
}
