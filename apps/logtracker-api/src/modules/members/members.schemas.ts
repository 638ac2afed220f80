import { email, envelope, id, iso, messageEnvelope, timestamp } from '@repo/schemas';
import { z } from 'zod';
import { PROJECT_ROLES, type ProjectRole } from '../../db/schema/index.js';

export const AddMemberBody = z.object({
  email,
  role: z.enum(PROJECT_ROLES).default('member'),
});

export const UpdateMemberBody = z.object({ role: z.enum(PROJECT_ROLES) });

export const MemberParams = z.object({ project_id: id, user_id: id });

export const MemberResponse = z.object({
  user_id: z.number().int(),
  name: z.string(),
  email: z.string(),
  role: z.enum(PROJECT_ROLES),
  added_at: timestamp,
});

export const MemberEnvelope = envelope(MemberResponse);
export const MemberListEnvelope = envelope(z.array(MemberResponse));
export { messageEnvelope };

export function presentMember(m: { userId: number; name: string; email: string; role: ProjectRole; createdAt: Date }) {
  return { user_id: m.userId, name: m.name, email: m.email, role: m.role, added_at: iso(m.createdAt) };
}
