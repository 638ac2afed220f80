import { iso, timestamp } from '@repo/schemas';
import { z } from 'zod';
import {
  KYC_STATUSES,
  LANGS,
  ROLES,
  USER_STATUSES,
  VALIDATION_STATUSES,
  type PrestataireProfile,
  type User,
} from '../../db/schema/index.js';

/** The prestataire's business profile as its owner and admins see it. */
export const PrestataireProfileResponse = z.object({
  business_name: z.string(),
  siret: z.string(),
  description: z.string().nullable(),
  address: z.string(),
  postal_code: z.string(),
  city: z.string(),
  city_id: z.number().int().nullable(),
  latitude: z.number().nullable(),
  longitude: z.number().nullable(),
  service_radius_km: z.number().int(),
  timezone: z.string(),
  hourly_rate_cents: z.number().int().nullable(),
  currency: z.literal('EUR'),
  public_phone: z.string().nullable(),
  website: z.string().nullable(),
  validation_status: z.enum(VALIDATION_STATUSES),
  validation_note: z.string().nullable(),
  validated_at: timestamp.nullable(),
  rating_average: z.number().nullable(),
  rating_count: z.number().int(),
});

/** An account as its owner and admins see it. */
export const UserResponse = z.object({
  id: z.number().int(),
  role: z.enum(ROLES),
  status: z.enum(USER_STATUSES),
  email: z.string(),
  /** A new address awaiting confirmation by the link sent to it; `email` changes only then. */
  pending_email: z.string().nullable(),
  first_name: z.string(),
  last_name: z.string(),
  phone: z.string().nullable(),
  lang: z.enum(LANGS),
  photo_url: z.string().nullable(),
  email_verified: z.boolean(),
  email_verified_at: timestamp.nullable(),
  kyc_status: z.enum(KYC_STATUSES),
  has_password: z.boolean(),
  created_at: timestamp,
  prestataire: PrestataireProfileResponse.nullable(),
});
export type UserResponse = z.infer<typeof UserResponse>;

/** Public URL of a stored public file (photos), served by the media route. */
export function mediaUrl(key: string | null): string | null {
  return key ? `/api/v1/media/${key}` : null;
}

export function presentProfile(p: PrestataireProfile): z.infer<typeof PrestataireProfileResponse> {
  return {
    business_name: p.businessName,
    siret: p.siret,
    description: p.description,
    address: p.address,
    postal_code: p.postalCode,
    city: p.city,
    city_id: p.cityId,
    latitude: p.latitude,
    longitude: p.longitude,
    service_radius_km: p.serviceRadiusKm,
    timezone: p.timezone,
    hourly_rate_cents: p.hourlyRateCents,
    currency: 'EUR',
    public_phone: p.publicPhone,
    website: p.website,
    validation_status: p.validationStatus,
    validation_note: p.validationNote,
    validated_at: iso(p.validatedAt),
    rating_average: p.ratingAverage === null ? null : Math.round(p.ratingAverage * 100) / 100,
    rating_count: p.ratingCount,
  };
}

export function presentUser(user: User, profile?: PrestataireProfile | null): UserResponse {
  return {
    id: user.id,
    role: user.role,
    status: user.status,
    email: user.email,
    pending_email: user.pendingEmail,
    first_name: user.firstName,
    last_name: user.lastName,
    phone: user.phone,
    lang: user.lang,
    photo_url: mediaUrl(user.photoKey),
    email_verified: user.emailVerifiedAt !== null,
    email_verified_at: iso(user.emailVerifiedAt),
    kyc_status: user.kycStatus,
    has_password: user.passwordHash !== null,
    created_at: iso(user.createdAt),
    prestataire: profile ? presentProfile(profile) : null,
  };
}

/** `{ user, token }`: what registration, login and social sign-in answer. */
export const AuthPayload = z.object({ user: UserResponse, token: z.string(), token_type: z.literal('Bearer') });
