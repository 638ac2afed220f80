import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import type { FastifyBaseLogger } from 'fastify';
import type { DbTx } from '../../db/index.js';
import { newStorageKey, type Storage } from '../../integrations/storage/storage.js';
import type { Actor } from '../../lib/context.js';
import type { UploadedFile } from '../../lib/uploads.js';
import { type ActivityRecorder, userSubject } from '../activity-log/index.js';
import { lockProfile } from '../prestataire-profile/index.js';
import { mediaUrl } from '../user-store/index.js';
import * as repo from './gallery.repository.js';
import { MAX_GALLERY_PHOTOS } from './gallery.schemas.js';

function audit(p: repo.GalleryPhoto) {
  return { photo_id: p.id, prestataire_id: p.prestataireId, url: mediaUrl(p.storageKey), caption: p.caption, position: p.position };
}

/** A prestataire's public gallery: photos stored under `public/`, served by the media route. */
export function createGalleryService(deps: { db: DbTx; storage: Storage; recorder: ActivityRecorder; log: Pick<FastifyBaseLogger, 'warn'> }) {
  const { db, storage, recorder } = deps;

  /** A file no row points to any more; a failure leaves an orphan on disk, never a broken gallery. */
  async function discard(keys: string[]) {
    for (const key of keys) {
      try {
        await storage.remove(key);
      } catch (error) {
        deps.log.warn({ err: error, key }, 'stored file could not be removed');
      }
    }
  }

  return {
    /**
     * Stores the files, then their rows in one transaction holding the profile's lock, so that two
     * uploads at once cannot pass the limit together; the files are removed again when it fails.
     */
    async add(actor: Actor, files: UploadedFile[], caption: string | null, field: string) {
      const prestataireId = actor.userId;
      const limitError = (n: number) =>
        AppError.validation({
          [field]: [`A gallery holds at most ${MAX_GALLERY_PHOTOS} photos; it has ${n}, so ${Math.max(0, MAX_GALLERY_PHOTOS - n)} more may be added`],
        });
      // Checked again under the lock below; this spares storing files bound to be refused.
      const current = await repo.countPhotos(db, prestataireId);
      if (current.n + files.length > MAX_GALLERY_PHOTOS) throw limitError(current.n);
      const keys = files.map((f) => newStorageKey('public/gallery', f.extension));
      const stored: string[] = [];
      try {
        for (const [index, file] of files.entries()) {
          await storage.put(keys[index]!, file.buffer);
          stored.push(keys[index]!);
        }
        return await withTransaction(db, async (tx) => {
          if (!(await lockProfile(tx, prestataireId))) throw AppError.notFound('Prestataire profile');
          const { n, lastPosition } = await repo.countPhotos(tx, prestataireId);
          if (n + files.length > MAX_GALLERY_PHOTOS) throw limitError(n);
          const photos = await repo.insertPhotos(
            tx,
            keys.map((storageKey, index) => ({ prestataireId, storageKey, caption, position: lastPosition + 1 + index })),
          );
          await recorder.record(
            actor,
            'prestataire.gallery_photos_added',
            userSubject(prestataireId),
            { after: { photos: photos.map(audit) } },
            tx,
          );
          return photos;
        });
      } catch (error) {
        await discard(stored);
        throw error;
      }
    },

    /** Deletes one of the prestataire's photos, then its file; another's is not found. */
    async remove(actor: Actor, photoId: number) {
      const photo = await withTransaction(db, async (tx) => {
        const deleted = await repo.deleteOwnPhoto(tx, actor.userId, photoId);
        if (!deleted) throw AppError.notFound('Photo');
        await recorder.record(actor, 'prestataire.gallery_photo_deleted', userSubject(actor.userId), { before: audit(deleted) }, tx);
        return deleted;
      });
      await discard([photo.storageKey]);
    },
  };
}

export type GalleryService = ReturnType<typeof createGalleryService>;
