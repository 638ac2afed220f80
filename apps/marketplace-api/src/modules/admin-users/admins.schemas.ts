import { email, paginationQuery, passwordField } from '@repo/schemas';
import { z } from 'zod';
import { LANGS } from '../../db/schema/index.js';
import { nameField, optionalPhoneField } from '../auth/index.js';

export const ListAdminsQuery = paginationQuery({ defaultPerPage: 20, maxPerPage: 100 });

export const CreateAdminBody = z
  .object({
    first_name: nameField,
    last_name: nameField,
    email,
    password: passwordField,
    password_confirmation: z.string().max(256),
    phone: optionalPhoneField,
    lang: z.enum(LANGS).default('fr'),
    email_verified: z.boolean().default(false),
  })
  .superRefine((body, ctx) => {
    if (body.password !== body.password_confirmation) {
      ctx.addIssue({ code: 'custom', path: ['password_confirmation'], message: 'Password confirmation does not match' });
    }
  });
export type CreateAdminBody = z.infer<typeof CreateAdminBody>;
