import { envelope, id, iso, storableText, UNSTORABLE_TEXT_MESSAGE, paginatedEnvelope, paginationQuery, timestamp, latitudeQuery, longitudeQuery } from '@repo/schemas';
import { z } from 'zod';
import { CategorySummary } from '../catalogue/index.js';
import { mediaUrl } from '../user-store/index.js';
import { SEARCH_SORTS, type PrestataireDetail, type SearchRow, type ServiceOfPrestataire } from './prestataires.repository.js';

export const PrestataireParams = z.object({ prestataire: id });

export const MAX_RADIUS_KM = 200;

export const SearchPrestatairesQuery = paginationQuery({ defaultPerPage: 20, maxPerPage: 100 })
  .extend({
    latitude: latitudeQuery.optional(),
    longitude: longitudeQuery.optional(),
    radius_km: z.coerce.number().gt(0).max(MAX_RADIUS_KM).default(30),
    city_id: id.optional(),
    service_id: id.optional(),
    category_id: id.optional(),
    q: z.string().trim().min(1, 'Must not be empty').max(100).refine(storableText, UNSTORABLE_TEXT_MESSAGE).optional(),
    min_rating: z.coerce.number().min(0).max(5).optional(),
    sort: z.enum(SEARCH_SORTS).optional(),
  })
  .superRefine((query, ctx) => {
    const hasLatitude = query.latitude !== undefined;
    const hasLongitude = query.longitude !== undefined;
    if (hasLatitude !== hasLongitude) {
      ctx.addIssue({
        code: 'custom',
        path: [hasLatitude ? 'longitude' : 'latitude'],
        message: 'Give latitude and longitude together',
      });
    }
    if (hasLatitude && query.city_id !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['city_id'], message: 'Give either a city or coordinates, not both' });
    }
    if (query.sort === 'distance' && !hasLatitude && !hasLongitude && query.city_id === undefined) {
      ctx.addIssue({ code: 'custom', path: ['sort'], message: 'Sorting by distance needs latitude and longitude or a city_id' });
    }
  });
export type SearchPrestatairesQuery = z.infer<typeof SearchPrestatairesQuery>;

const ServiceBrief = z.object({ id: z.number().int(), slug: z.string(), name: z.string() });

/** What anyone may see of a prestataire in search results; nothing private (e-mail, SIRET, own phone, documents). */
export const PrestataireSummaryResponse = z.object({
  id: z.number().int().describe("The prestataire's user id"),
  business_name: z.string(),
  description: z.string().nullable(),
  city: z.string(),
  postal_code: z.string(),
  latitude: z.number().nullable(),
  longitude: z.number().nullable(),
  distance_km: z.number().nullable().describe('From the searched point, when one is given'),
  rating_average: z.number().nullable(),
  rating_count: z.number().int(),
  hourly_rate_cents: z.number().int().nullable(),
  price_cents: z.number().int().nullable().describe("The prestataire's own price for the searched service_id, when it set one"),
  currency: z.literal('EUR'),
  photo_url: z.string().nullable(),
  services: z.array(ServiceBrief),
});

export const PrestataireServiceResponse = z.object({
  id: z.number().int(),
  slug: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  category: CategorySummary,
  price_cents: z.number().int().nullable().describe("The prestataire's price, else the catalogue's indicative price"),
  duration_minutes: z.number().int(),
  currency: z.string(),
  custom_price: z.boolean().describe('Whether the price is set by the prestataire rather than indicative'),
});

export const OpeningHoursResponse = z.object({
  day_of_week: z.number().int().describe('ISO weekday: 1 = Monday … 7 = Sunday'),
  start_time: z.string().describe('Wall-clock time in the prestataire’s time zone, HH:MM'),
  end_time: z.string(),
});

export const GalleryPhotoResponse = z.object({
  id: z.number().int(),
  url: z.string(),
  caption: z.string().nullable(),
});

/** The public page of a prestataire. */
export const PrestataireResponse = PrestataireSummaryResponse.omit({ distance_km: true, price_cents: true, services: true }).extend({
  address: z.string(),
  website: z.string().nullable(),
  public_phone: z.string().nullable(),
  service_radius_km: z.number().int(),
  timezone: z.string(),
  services: z.array(PrestataireServiceResponse),
  gallery: z.array(GalleryPhotoResponse),
  opening_hours: z.array(OpeningHoursResponse),
  member_since: timestamp,
  is_favourite: z.boolean().optional().describe('Present when the caller is a signed-in client'),
});

export const FavouriteResponse = z.object({ prestataire_id: z.number().int(), favourite: z.boolean() });

export const PrestataireListEnvelope = paginatedEnvelope(PrestataireSummaryResponse);
export const PrestataireEnvelope = envelope(PrestataireResponse);
export const FavouriteEnvelope = envelope(FavouriteResponse);

const rating = (value: number | null) => (value === null ? null : Math.round(value * 100) / 100);

export function presentSummary(
  row: SearchRow,
  services: { id: number; slug: string; name: string }[],
): z.infer<typeof PrestataireSummaryResponse> {
  return {
    id: row.id,
    business_name: row.businessName,
    description: row.description,
    city: row.city,
    postal_code: row.postalCode,
    latitude: row.latitude,
    longitude: row.longitude,
    distance_km: row.distanceKm === null ? null : Math.round(row.distanceKm * 10) / 10,
    rating_average: rating(row.ratingAverage),
    rating_count: row.ratingCount,
    hourly_rate_cents: row.hourlyRateCents,
    price_cents: row.servicePriceCents,
    currency: 'EUR',
    photo_url: mediaUrl(row.photoKey),
    services,
  };
}

function presentService(s: ServiceOfPrestataire): z.infer<typeof PrestataireServiceResponse> {
  return {
    id: s.id,
    slug: s.slug,
    name: s.name,
    description: s.description,
    category: s.category,
    price_cents: s.ownPriceCents ?? s.cataloguePriceCents,
    duration_minutes: s.ownDurationMinutes ?? s.catalogueDurationMinutes,
    currency: s.currency,
    custom_price: s.ownPriceCents !== null,
  };
}

export function presentPrestataire(detail: PrestataireDetail, isFavourite?: boolean): z.infer<typeof PrestataireResponse> {
  const { profile, photoKey, memberSince } = detail;
  return {
    id: profile.userId,
    business_name: profile.businessName,
    description: profile.description,
    city: profile.city,
    postal_code: profile.postalCode,
    latitude: profile.latitude,
    longitude: profile.longitude,
    rating_average: rating(profile.ratingAverage),
    rating_count: profile.ratingCount,
    hourly_rate_cents: profile.hourlyRateCents,
    currency: 'EUR',
    photo_url: mediaUrl(photoKey),
    address: profile.address,
    website: profile.website,
    public_phone: profile.publicPhone,
    service_radius_km: profile.serviceRadiusKm,
    timezone: profile.timezone,
    services: detail.services.map(presentService),
    gallery: detail.gallery.map((g) => ({ id: g.id, url: mediaUrl(g.storageKey) ?? '', caption: g.caption })),
    opening_hours: detail.openingHours.map((h) => ({
      day_of_week: h.dayOfWeek,
      start_time: h.startTime.slice(0, 5),
      end_time: h.endTime.slice(0, 5),
    })),
    member_since: iso(memberSince),
    ...(isFavourite === undefined ? {} : { is_favourite: isFavourite }),
  };
}
