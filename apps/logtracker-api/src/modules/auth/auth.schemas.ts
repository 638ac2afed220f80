import { email, envelope, iso, passwordField, timestamp } from '@repo/schemas';
import { z } from 'zod';
import type { User } from '../../db/schema/index.js';

export const RegisterBody = z
  .object({
    name: z.string().trim().min(1, 'Name is required').max(255),
    email,
    password: passwordField,
    password_confirmation: z.string(),
  })
  .refine((b) => b.password === b.password_confirmation, {
    path: ['password_confirmation'],
    message: 'Password confirmation does not match',
  });
export type RegisterBody = z.infer<typeof RegisterBody>;

export const LoginBody = z.object({
  email,
  password: z.string().min(1, 'Password is required').max(256),
});
export type LoginBody = z.infer<typeof LoginBody>;

export const UserResponse = z.object({
  id: z.number().int(),
  name: z.string(),
  email: z.string(),
  created_at: timestamp,
  updated_at: timestamp,
});

export const AuthResponse = envelope(
  z.object({ user: UserResponse, token: z.string(), token_type: z.literal('Bearer') }),
);

export function presentUser(user: Pick<User, 'id' | 'name' | 'email' | 'createdAt' | 'updatedAt'>) {
  return {
    id: user.id,
    name: user.name,
    email: user.email,
    created_at: iso(user.createdAt),
    updated_at: iso(user.updatedAt),
  };
}
