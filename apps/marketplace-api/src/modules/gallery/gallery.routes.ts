import { AppError, type FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses, messageEnvelope } from '@repo/schemas';
import { actorOf } from '../../lib/context.js';
import { IMAGE_TYPES, parseFields, readMultipart } from '../../lib/uploads.js';
import { GalleryFields, GalleryUploadEnvelope, MAX_GALLERY_PHOTOS, MAX_PHOTOS_PER_UPLOAD, PhotoParams, presentPhoto } from './gallery.schemas.js';
import type { GalleryService } from './gallery.service.js';

const PHOTO_FIELDS = ['photo', 'photos'];

export function galleryRoutes(deps: { gallery: GalleryService }): FastifyPluginAsyncZod {
  return async (app) => {
    const prestataireOnly = app.auth.requireRole('prestataire');
    const security = [{ bearerAuth: [] }];

    app.post(
      '/prestataire/gallery',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'addGalleryPhotos',
          tags: ['prestataire'],
          summary: 'Add photos of your work to your public gallery',
          description:
            `multipart/form-data: one image in the \`photo\` part (answers that photo) or up to ${MAX_PHOTOS_PER_UPLOAD} in \`photos\` parts ` +
            `(answers the list), and an optional \`caption\` given to each. JPEG, PNG or WebP, recognised by their content; each file ` +
            `at most the configured upload size (413 beyond); a gallery holds at most ${MAX_GALLERY_PHOTOS} photos (422 beyond).`,
          consumes: ['multipart/form-data'],
          security,
          response: { 201: GalleryUploadEnvelope, ...errorResponses(400, 401, 403, 404, 413, 422, 429) },
        },
      },
      async (request, reply) => {
        const { files, fields } = await readMultipart(request, {
          accept: IMAGE_TYPES,
          maxFiles: MAX_PHOTOS_PER_UPLOAD,
          acceptLabel: 'a JPEG, PNG or WebP image',
        });
        const stray = files.find((f) => !PHOTO_FIELDS.includes(f.field));
        if (stray) throw AppError.validation({ [stray.field]: ['Send images in the `photo` or `photos` part'] });
        if (files.length === 0) throw AppError.validation({ photo: ['Required: send the image in the `photo` part (or several in `photos`)'] });
        const { caption } = parseFields(GalleryFields, fields);
        const single = files.length === 1 && files[0]!.field === 'photo';
        const photos = await deps.gallery.add(actorOf(request), files, caption, single ? 'photo' : 'photos');
        const data = single ? presentPhoto(photos[0]!) : photos.map(presentPhoto);
        return reply.status(201).send({ data, message: photos.length === 1 ? 'Photo added' : 'Photos added' });
      },
    );

    app.delete(
      '/prestataire/gallery/:photo',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'deleteGalleryPhoto',
          tags: ['prestataire'],
          summary: 'Remove a photo from your gallery (its file goes too)',
          security,
          params: PhotoParams,
          response: { 200: messageEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        await deps.gallery.remove(actorOf(request), request.params.photo);
        return { message: 'Photo deleted' };
      },
    );
  };
}
