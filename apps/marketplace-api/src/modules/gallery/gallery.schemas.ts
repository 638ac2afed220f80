import { envelope, id, iso, storableText, timestamp, UNSTORABLE_TEXT_MESSAGE } from '@repo/schemas';
import { z } from 'zod';
import { mediaUrl } from '../user-store/index.js';
import type { GalleryPhoto } from './gallery.repository.js';

/** A gallery shows a business's work, not an archive. */
export const MAX_GALLERY_PHOTOS = 20;
/** The multipart plugin's own per-request file limit (app.ts) is 10. */
export const MAX_PHOTOS_PER_UPLOAD = 10;

export const PhotoParams = z.object({ photo: id });

/** The text fields of an upload; a blank caption is none. */
export const GalleryFields = z.object({
  caption: z
    .string()
    .trim()
    .max(500)
    .refine(storableText, UNSTORABLE_TEXT_MESSAGE)
    .optional()
    .transform((v) => (v ? v : null)),
});

export const GalleryPhotoResponse = z.object({
  id: z.number().int(),
  url: z.string().describe('Served by the public media route, as on the prestataire page'),
  caption: z.string().nullable(),
  position: z.number().int(),
  created_at: timestamp,
});

/** One photo sent in `photo` answers that photo; photos sent in `photos` answer the list. */
export const GalleryUploadEnvelope = envelope(z.union([GalleryPhotoResponse, z.array(GalleryPhotoResponse)]));

export function presentPhoto(p: GalleryPhoto): z.infer<typeof GalleryPhotoResponse> {
  return { id: p.id, url: mediaUrl(p.storageKey) ?? '', caption: p.caption, position: p.position, created_at: iso(p.createdAt) };
}
