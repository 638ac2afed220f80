import { iso, storableText, timestamp, UNSTORABLE_TEXT_MESSAGE } from '@repo/schemas';
import { z } from 'zod';
import { LANGS, type ContentVersion } from '../../db/schema/index.js';

export const TITLE_MAX = 200;
export const BODY_MAX = 100_000;

export const ContentParams = z.object({
  key: z
    .string()
    .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'Must be a slug: lower-case letters, digits, - and _, at most 64 characters')
    .describe('The entry: terms, privacy, faq…'),
});

const lang = z.enum(LANGS).default('fr').describe('The language (default fr)');

export const AdminContentQuery = z.object({
  lang,
  version: z.coerce.number().int().min(1).max(2_147_483_647).optional().describe('An older version; the latest without it'),
});

export const PublicContentQuery = z.object({ lang: lang.describe('The language; an entry without it is read in French') });

export const ContentBody = z.object({
  lang,
  title: z.string().trim().min(1, 'Must not be empty').max(TITLE_MAX).refine(storableText, UNSTORABLE_TEXT_MESSAGE),
  body: z.string().min(1, 'Must not be empty').max(BODY_MAX).refine(storableText, UNSTORABLE_TEXT_MESSAGE).describe('Text or Markdown, kept as sent'),
});

export const ContentVersionResponse = z.object({
  key: z.string(),
  lang: z.enum(LANGS),
  version: z.number().int(),
  title: z.string(),
  body: z.string(),
  created_at: timestamp,
  created_by: z.number().int().nullable(),
});

export const AdminContentResponse = ContentVersionResponse.extend({
  /** Every version of the key in the language, newest first. */
  versions: z.array(z.object({ version: z.number().int(), created_at: timestamp, created_by: z.number().int().nullable() })),
});

export const PublicContentResponse = ContentVersionResponse.omit({ created_by: true });

export function presentContent(v: ContentVersion): z.infer<typeof ContentVersionResponse> {
  return {
    key: v.key,
    lang: v.lang as z.infer<typeof ContentVersionResponse>['lang'],
    version: v.version,
    title: v.title,
    body: v.body,
    created_at: iso(v.createdAt),
    created_by: v.createdBy,
  };
}

export function presentAdminContent(
  entry: ContentVersion,
  versions: { version: number; createdAt: Date; createdBy: number | null }[],
): z.infer<typeof AdminContentResponse> {
  return {
    ...presentContent(entry),
    versions: versions.map((v) => ({ version: v.version, created_at: iso(v.createdAt), created_by: v.createdBy })),
  };
}

export function presentPublicContent(v: ContentVersion): z.infer<typeof PublicContentResponse> {
  const { created_by: _createdBy, ...rest } = presentContent(v);
  return rest;
}
