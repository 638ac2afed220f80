import { storableText, UNSTORABLE_TEXT_MESSAGE, latitude, longitude } from '@repo/schemas';
import { z } from 'zod';
import { isTimeZone } from '../../lib/time.js';
import { phoneField } from '../auth/index.js';

const text = (max: number) => z.string().trim().min(1, 'Required').max(max).refine(storableText, UNSTORABLE_TEXT_MESSAGE);

/** Forms send an empty field to clear an optional value. */
const emptyToNull = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? null : value);

export const MAX_HOURLY_RATE_CENTS = 10_000_000;

/** Every field is optional: only those given change. SIRET and validation status are not the owner's to edit. */
export const UpdateProfileBody = z
  .object({
    business_name: text(255).optional(),
    description: z.preprocess(emptyToNull, z.string().trim().max(2000).refine(storableText, UNSTORABLE_TEXT_MESSAGE).nullable().optional()),
    address: text(255).optional(),
    postal_code: z
      .string()
      .trim()
      .regex(/^\d{5}$/, 'Must be a French postal code of 5 digits')
      .optional(),
    city: text(120).optional(),
    city_id: z
      .number()
      .int()
      .min(1)
      .max(2_147_483_647)
      .nullable()
      .optional()
      .describe('A city from `GET /cities`; its name, postal code and coordinates fill those not given'),
    latitude: latitude.optional(),
    longitude: longitude.optional(),
    service_radius_km: z.number().int().min(1).max(500).optional(),
    timezone: z
      .string()
      .trim()
      .max(64)
      .refine(isTimeZone, { message: 'Must be an IANA time zone such as Europe/Paris' })
      .optional(),
    hourly_rate_cents: z.number().int().min(0).max(MAX_HOURLY_RATE_CENTS).nullable().optional(),
    public_phone: z.preprocess(emptyToNull, phoneField.nullable().optional()),
    website: z.preprocess(
      emptyToNull,
      z
        .url({ protocol: /^https$/, hostname: z.regexes.domain, message: 'Must be an https:// address' })
        .max(500)
        .nullable()
        .optional(),
    ),
  })
  .superRefine((body, ctx) => {
    const hasLatitude = body.latitude !== undefined;
    const hasLongitude = body.longitude !== undefined;
    if (hasLatitude !== hasLongitude) {
      ctx.addIssue({ code: 'custom', path: [hasLatitude ? 'longitude' : 'latitude'], message: 'Give latitude and longitude together' });
    }
  });
export type UpdateProfileBody = z.infer<typeof UpdateProfileBody>;
