import { email, envelope, id, iso, storableText, UNSTORABLE_TEXT_MESSAGE, paginatedEnvelope, paginationQuery, passwordField, timestamp, latitude, longitude } from '@repo/schemas';
import { z } from 'zod';
import { LANGS, ROLES, USER_STATUSES, type PrestataireProfile, type User } from '../../db/schema/index.js';
import { ActivityEntryResponse, lowerBound, rangeReversed, upperBound } from '../activity-log/index.js';
import { nameField, optionalPhoneField, siretField } from '../auth/index.js';
import { presentUser, UserResponse } from '../user-store/index.js';

const text = (max: number) => z.string().trim().min(1, 'Required').max(max).refine(storableText, UNSTORABLE_TEXT_MESSAGE);

/** `true` / `false` in a query string. */
const queryBoolean = z.enum(['true', 'false'], { message: 'Must be true or false' }).transform((v) => v === 'true');

export const UserParams = z.object({ user: id });

export const USER_SORTS = ['created_at', '-created_at', 'last_name', '-last_name', 'email', '-email'] as const;
export type UserSort = (typeof USER_SORTS)[number];

export const ListUsersQuery = paginationQuery({ defaultPerPage: 20, maxPerPage: 100 })
  .extend({
    role: z.enum(ROLES).optional(),
    status: z.enum(USER_STATUSES).optional(),
    q: z.string().trim().min(1).max(100).refine(storableText, UNSTORABLE_TEXT_MESSAGE).describe('Part of the name or e-mail, any case').optional(),
    email_verified: queryBoolean.optional(),
    created_from: lowerBound.optional(),
    created_to: upperBound.optional(),
    include_deleted: queryBoolean.default(false),
    sort: z.enum(USER_SORTS).default('-created_at'),
  })
  .refine((q) => !rangeReversed(q.created_from, q.created_to), { message: 'Must not be before created_from', path: ['created_to'] });
export type ListUsersQuery = z.infer<typeof ListUsersQuery>;

export const CreateUserBody = z
  .object({
    // Administrators are created through /admin/admins, with a password of their own.
    role: z.enum(['client', 'prestataire'], { message: 'Must be client or prestataire' }),
    first_name: nameField,
    last_name: nameField,
    email,
    phone: optionalPhoneField,
    lang: z.enum(LANGS).default('fr'),
    // Without one the account is created password-less and its owner is e-mailed a link to choose one.
    password: passwordField.optional(),
    password_confirmation: z.string().max(256).optional(),
    // The administrator vouches for the address.
    email_verified: z.boolean().default(false),
    business_name: text(255).optional(),
    siret: siretField.optional(),
    address: text(255).optional(),
    postal_code: z.string().trim().regex(/^\d{5}$/, 'Must be a French postal code of 5 digits').optional(),
    city: text(120).optional(),
    latitude: latitude.optional(),
    longitude: longitude.optional(),
  })
  .superRefine((body, ctx) => {
    if (body.password_confirmation !== undefined && body.password !== body.password_confirmation) {
      ctx.addIssue({ code: 'custom', path: ['password_confirmation'], message: 'Password confirmation does not match' });
    }
    if (body.role !== 'prestataire') return;
    for (const field of ['business_name', 'siret', 'address', 'postal_code', 'city'] as const) {
      if (body[field] === undefined) ctx.addIssue({ code: 'custom', path: [field], message: 'Required for a prestataire' });
    }
    if ((body.latitude === undefined) !== (body.longitude === undefined)) {
      ctx.addIssue({ code: 'custom', path: [body.latitude === undefined ? 'latitude' : 'longitude'], message: 'Give latitude and longitude together' });
    }
  });
export type CreateUserBody = z.infer<typeof CreateUserBody>;

export const UpdateUserBody = z
  .object({
    first_name: nameField.optional(),
    last_name: nameField.optional(),
    phone: optionalPhoneField,
    email: email.optional(),
    lang: z.enum(LANGS).optional(),
    email_verified: z.boolean().optional(),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), {
    message: 'Send at least one of first_name, last_name, phone, email, lang, email_verified',
  });
export type UpdateUserBody = z.infer<typeof UpdateUserBody>;

export const UpdateStatusBody = z
  .object({
    status: z.enum(USER_STATUSES),
    reason: z.string().trim().max(1000).refine(storableText, UNSTORABLE_TEXT_MESSAGE).nullish(),
  })
  .superRefine((body, ctx) => {
    if (body.status !== 'active' && !body.reason) {
      ctx.addIssue({ code: 'custom', path: ['reason'], message: 'A reason is required to suspend or ban an account' });
    }
  });
export type UpdateStatusBody = z.infer<typeof UpdateStatusBody>;

export const SendWarningBody = z.object({
  subject: z.string().trim().min(3).max(150).refine(storableText, UNSTORABLE_TEXT_MESSAGE),
  message: z.string().trim().min(3).max(5000).refine(storableText, UNSTORABLE_TEXT_MESSAGE),
});
export type SendWarningBody = z.infer<typeof SendWarningBody>;

/** An account as the back office sees it. */
export const AdminUserResponse = UserResponse.extend({
  status_reason: z.string().nullable(),
  last_login_at: timestamp.nullable(),
  deleted_at: timestamp.nullable(),
});
export type AdminUserResponse = z.infer<typeof AdminUserResponse>;

export const AdminUserDetailResponse = AdminUserResponse.extend({
  counts: z.object({ active_sessions: z.number().int(), devices: z.number().int() }),
  recent_activity: z.array(ActivityEntryResponse),
});

export const AdminUserEnvelope = envelope(AdminUserResponse);
export const AdminUserDetailEnvelope = envelope(AdminUserDetailResponse);
export const AdminUserListEnvelope = paginatedEnvelope(AdminUserResponse);

export function presentAdminUser(user: User, profile?: PrestataireProfile | null): AdminUserResponse {
  return {
    ...presentUser(user, profile),
    status_reason: user.statusReason,
    last_login_at: iso(user.lastLoginAt),
    deleted_at: iso(user.deletedAt),
  };
}

