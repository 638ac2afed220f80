import { AppError, type FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses, storableText } from '@repo/schemas';
import { z } from 'zod';
import { isPublicKey, type Storage } from '../../integrations/storage/storage.js';

/** Longer than any key the storage makes. */
const MAX_KEY_LENGTH = 300;

const CONTENT_TYPES: Record<string, string> = { jpg: 'image/jpeg', png: 'image/png', webp: 'image/webp' };

/** Public files (profile and gallery photos); documents are never served here. */
export function mediaRoutes(deps: { storage: Storage }): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/media/*',
      {
        // A path that is no stored key (too long, or holding text no key holds) is simply not found.
        config: { checksOwnText: true },
        schema: {
          operationId: 'getMedia',
          tags: ['media'],
          summary: 'A public photo (the `photo_url` of a profile or a gallery item)',
          security: [],
          params: z.object({ '*': z.string() }),
          response: { 200: z.any().describe('The image bytes'), ...errorResponses(404, 429) },
        },
      },
      async (request, reply) => {
        const key = request.params['*'];
        const extension = key.slice(key.lastIndexOf('.') + 1);
        const type = CONTENT_TYPES[extension];
        const storedKey = key.length <= MAX_KEY_LENGTH && storableText(key) && isPublicKey(key);
        const file = storedKey && type ? await deps.storage.open(key) : undefined;
        if (!file) throw AppError.notFound('File');
        // Keys are random and never reused, so the bytes behind a URL never change.
        return reply
          .header('content-type', type)
          .header('content-length', String(file.size))
          .header('cache-control', 'public, max-age=31536000, immutable')
          .header('x-content-type-options', 'nosniff')
          .send(file.stream);
      },
    );
  };
}
