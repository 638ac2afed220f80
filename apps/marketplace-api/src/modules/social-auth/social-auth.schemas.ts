import { storableText, UNSTORABLE_TEXT_MESSAGE } from '@repo/schemas';
import { z } from 'zod';

const name = z.string().trim().max(100).refine(storableText, UNSTORABLE_TEXT_MESSAGE);

export const SocialSignInBody = z.object({
  id_token: z.string().min(1).max(16_384).describe("The provider's OpenID Connect ID token"),
  nonce: z
    .string()
    .min(1)
    .max(512)
    .optional()
    .describe('The raw nonce the app generated for this sign-in; the token must carry it or its SHA-256 hex'),
  first_name: name.optional().describe("Apple sends the person's name to the app on the first sign-in only, outside the token"),
  last_name: name.optional(),
});
export type SocialSignInBody = z.infer<typeof SocialSignInBody>;
