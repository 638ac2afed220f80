import { envelope, id } from '@repo/schemas';
import { z } from 'zod';
import { CategorySummary } from '../catalogue/index.js';
import type { OwnService } from './prestataire-services.repository.js';

export const MAX_PRICE_CENTS = 10_000_000;
export const MIN_DURATION_MINUTES = 15;
export const MAX_DURATION_MINUTES = 1440;
/** More than the catalogue holds; bounds the work a single body can ask for. */
export const MAX_SERVICES = 500;

export const EnableServiceParams = z.object({ service: id });

const ServiceItem = z.object({
  service_id: z.number().int().min(1).max(2_147_483_647),
  price_cents: z
    .number()
    .int()
    .min(0)
    .max(MAX_PRICE_CENTS)
    .nullable()
    .optional()
    .describe("Your price in cents; left out: the catalogue's indicative price"),
  duration_minutes: z
    .number()
    .int()
    .min(MIN_DURATION_MINUTES)
    .max(MAX_DURATION_MINUTES)
    .optional()
    .describe("How long the job takes you, 15–1440 minutes; left out: the catalogue's duration"),
});

/** The whole set of services offered: those left out are removed. */
export const SyncServicesBody = z.object({
  services: z
    .array(ServiceItem)
    .max(MAX_SERVICES)
    .superRefine((items, ctx) => {
      const seen = new Set<number>();
      items.forEach((item, index) => {
        if (seen.has(item.service_id)) {
          ctx.addIssue({ code: 'custom', path: [index, 'service_id'], message: 'This service is listed more than once' });
        }
        seen.add(item.service_id);
      });
    }),
});
export type SyncServicesBody = z.infer<typeof SyncServicesBody>;

export const OwnServiceResponse = z.object({
  service_id: z.number().int(),
  name: z.string(),
  slug: z.string(),
  category: CategorySummary,
  price_cents: z.number().int().nullable().describe('Your price (the catalogue has none for some services)'),
  duration_minutes: z.number().int(),
});

export const OwnServicesEnvelope = envelope(z.array(OwnServiceResponse));
export const OwnServiceEnvelope = envelope(OwnServiceResponse);

export function presentOwnService(s: OwnService): z.infer<typeof OwnServiceResponse> {
  return {
    service_id: s.serviceId,
    name: s.name,
    slug: s.slug,
    category: s.category,
    price_cents: s.ownPriceCents ?? s.cataloguePriceCents,
    duration_minutes: s.ownDurationMinutes ?? s.catalogueDurationMinutes,
  };
}
