import { envelope, id, iso, paginatedEnvelope, paginationQuery, storableText, timestamp, UNSTORABLE_TEXT_MESSAGE } from '@repo/schemas';
import { z } from 'zod';
import type { Service, ServiceCategory } from '../../db/schema/index.js';
import { foldAccents } from '../../lib/text.js';
import { CategoryResponse, CategorySummary, presentCategory, presentService } from '../catalogue/index.js';

const text = (min: number, max: number) =>
  z
    .string()
    .trim()
    .min(min, `Must be at least ${min} characters`)
    .max(max, `Must be at most ${max} characters`)
    .refine(storableText, UNSTORABLE_TEXT_MESSAGE);

const bodyId = z.number().int().min(1).max(2_147_483_647);

/** Lower-case letters and digits in words joined by single hyphens: the form URLs carry. */
export const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const slug = z.string().max(120, 'Must be at most 120 characters').regex(SLUG, 'Must be lower-case letters and digits joined by hyphens');

export const AdminServiceParams = z.object({ service: id });

export const AdminServicesQuery = paginationQuery({ defaultPerPage: 50, maxPerPage: 100 }).extend({
  category_id: id.optional(),
  active: z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .optional(),
  q: text(1, 100).optional(),
});
export type AdminServicesQuery = z.infer<typeof AdminServicesQuery>;

/** A whole service (POST, PUT). A PUT leaves `slug` as it is when absent; the other optional fields take their defaults. */
export const ServiceBody = z.object({
  category_id: bodyId,
  name: text(2, 120),
  slug: slug.optional().describe('Derived from the name when absent (on creation)'),
  description: text(1, 2000).nullish(),
  duration_minutes: z.number().int().min(5).max(1440),
  price_cents: z.number().int().min(0).max(10_000_000).nullish().describe('Indicative price in cents'),
  active: z.boolean().optional(),
});
export type ServiceBody = z.infer<typeof ServiceBody>;

/** Some fields of a service (PATCH). */
export const ServicePatch = ServiceBody.partial();
export type ServicePatch = z.infer<typeof ServicePatch>;

/**
 * New positions: `{ services: [{ id, position }] }`. Only the services named move; positions
 * order services within their category (the catalogue sorts by category first).
 */
export const ReorderBody = z.object({
  services: z
    .array(z.object({ id: bodyId, position: z.number().int().min(0).max(1_000_000) }))
    .min(1, 'Name at least one service')
    .max(1000)
    .superRefine((items, ctx) => {
      const seen = new Set<number>();
      items.forEach((item, index) => {
        if (seen.has(item.id)) ctx.addIssue({ code: 'custom', path: [index, 'id'], message: 'Named twice' });
        seen.add(item.id);
      });
    }),
});
export type ReorderBody = z.infer<typeof ReorderBody>;

export const AdminServiceResponse = z.object({
  id: z.number().int(),
  slug: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  duration_minutes: z.number().int(),
  price_cents: z.number().int().nullable(),
  currency: z.string(),
  position: z.number().int(),
  active: z.boolean(),
  category: CategorySummary,
  created_at: timestamp,
  updated_at: timestamp,
});
export type AdminServiceResponse = z.infer<typeof AdminServiceResponse>;

export const AdminCategoryResponse = CategoryResponse.extend({
  services_count: z.number().int().describe('Every service of the category, active or not'),
  active_services_count: z.number().int(),
});

export const AdminServiceEnvelope = envelope(AdminServiceResponse);
export const AdminServiceListEnvelope = paginatedEnvelope(AdminServiceResponse);
/** A deletion: `data` is null when the service was deleted, the deactivated service when it was in use. */
export const DeleteServiceEnvelope = z.object({ data: AdminServiceResponse.nullable(), message: z.string() });

export function presentAdminService(s: Service, category: Pick<ServiceCategory, 'id' | 'slug' | 'name'>): AdminServiceResponse {
  return { ...presentService(s, category), active: s.active, created_at: iso(s.createdAt), updated_at: iso(s.updatedAt) };
}

export function presentAdminCategory(c: ServiceCategory, servicesCount: number, activeServicesCount: number): z.infer<typeof AdminCategoryResponse> {
  return { ...presentCategory(c, servicesCount), active_services_count: activeServicesCount };
}

/** A slug from a name: accents dropped (é → e, œ → oe), anything but letters and digits as one hyphen. */
export function slugify(name: string): string {
  return foldAccents(name)
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 120)
    .replace(/-+$/, '');
}
