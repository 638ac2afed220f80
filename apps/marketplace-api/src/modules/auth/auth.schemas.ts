import { email, envelope, storableText, UNSTORABLE_TEXT_MESSAGE, passwordField, latitude, longitude } from '@repo/schemas';
import { z } from 'zod';
import { LANGS } from '../../db/schema/index.js';
import { normaliseSiret, siretValid } from '../../lib/siret.js';
import { AuthPayload, UserResponse } from '../user-store/index.js';

export const nameField = z.string().trim().min(1, 'Required').max(100).refine(storableText, UNSTORABLE_TEXT_MESSAGE);

const text = (max: number) => z.string().trim().min(1, 'Required').max(max).refine(storableText, UNSTORABLE_TEXT_MESSAGE);

/**
 * A phone number in E.164 (`+33612345678`) or French national form (`06 12 34 56 78`), stored in
 * E.164 so that one number has one spelling whichever way it was typed.
 */
export function normalisePhone(input: string): string | undefined {
  const compact = input.replace(/[\s.\-()]/g, '');
  if (/^0[1-9]\d{8}$/.test(compact)) return `+33${compact.slice(1)}`;
  const international = compact.startsWith('00') ? `+${compact.slice(2)}` : compact;
  if (/^\+[1-9]\d{7,14}$/.test(international)) return international;
  return undefined;
}

export const phoneField = z
  .string()
  .max(32)
  .transform((value, ctx) => {
    const phone = normalisePhone(value);
    if (!phone) {
      ctx.addIssue({ code: 'custom', message: 'Must be a phone number in international form (+33612345678) or French form (06 12 34 56 78)' });
      return z.NEVER;
    }
    return phone;
  });

/** Forms send an empty field for "no phone". */
const emptyToNull = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? null : value);
export const optionalPhoneField = z.preprocess(emptyToNull, phoneField.nullable().optional());

function confirmationMatches(body: { password: string; password_confirmation: string }, ctx: z.RefinementCtx) {
  if (body.password !== body.password_confirmation) {
    ctx.addIssue({ code: 'custom', path: ['password_confirmation'], message: 'Password confirmation does not match' });
  }
}

const accountShape = {
  first_name: nameField,
  last_name: nameField,
  email,
  password: passwordField,
  password_confirmation: z.string().max(256),
  phone: optionalPhoneField,
  lang: z.enum(LANGS).default('fr'),
};

export const RegisterClientBody = z.object(accountShape).superRefine(confirmationMatches);
export type RegisterClientBody = z.infer<typeof RegisterClientBody>;

export const siretField = z
  .string()
  .max(40)
  .transform(normaliseSiret)
  .refine(siretValid, 'Must be a valid SIRET: 14 digits passing the checksum');

export const RegisterPrestataireBody = z
  .object({
    ...accountShape,
    business_name: text(255),
    siret: siretField,
    address: text(255),
    postal_code: z.string().trim().regex(/^\d{5}$/, 'Must be a French postal code of 5 digits'),
    // Taken from the city when `city_id` is given.
    city: text(120).optional(),
    city_id: z.number().int().min(1).max(2_147_483_647).optional(),
    latitude: latitude.optional(),
    longitude: longitude.optional(),
  })
  .superRefine((body, ctx) => {
    confirmationMatches(body, ctx);
    const hasLatitude = body.latitude !== undefined;
    const hasLongitude = body.longitude !== undefined;
    if (hasLatitude !== hasLongitude) {
      const missing = hasLatitude ? 'longitude' : 'latitude';
      ctx.addIssue({ code: 'custom', path: [missing], message: 'Give latitude and longitude together' });
    }
    if (!hasLatitude && !hasLongitude && body.city_id === undefined) {
      ctx.addIssue({ code: 'custom', path: ['city_id'], message: 'Give a city_id, or latitude and longitude' });
    }
    if (body.city_id === undefined && body.city === undefined) {
      ctx.addIssue({ code: 'custom', path: ['city'], message: 'Required unless a city_id is given' });
    }
  });
export type RegisterPrestataireBody = z.infer<typeof RegisterPrestataireBody>;

export const LoginBody = z.object({
  email,
  password: z.string().min(1, 'Required').max(256),
});
export type LoginBody = z.infer<typeof LoginBody>;

export const ChangePasswordBody = z
  .object({
    // Not asked of an account that has no password yet (made by social sign-in).
    current_password: z.string().max(256).optional(),
    password: passwordField,
    password_confirmation: z.string().max(256),
  })
  .superRefine(confirmationMatches);
export type ChangePasswordBody = z.infer<typeof ChangePasswordBody>;

export const AuthResponse = envelope(AuthPayload);
export const UserEnvelope = envelope(UserResponse);
