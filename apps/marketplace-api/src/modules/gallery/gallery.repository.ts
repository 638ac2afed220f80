import { and, count, eq, max } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { galleryPhotos } from '../../db/schema/index.js';

export type GalleryPhoto = typeof galleryPhotos.$inferSelect;

export async function countPhotos(db: DbTx, prestataireId: number) {
  const [row] = await db.select({ n: count(), last: max(galleryPhotos.position) }).from(galleryPhotos).where(eq(galleryPhotos.prestataireId, prestataireId));
  return { n: row?.n ?? 0, lastPosition: row?.last ?? -1 };
}

export async function insertPhotos(db: DbTx, rows: (typeof galleryPhotos.$inferInsert)[]): Promise<GalleryPhoto[]> {
  return db.insert(galleryPhotos).values(rows).returning();
}

/** Deletes the prestataire's photo; another's is not found (undefined). */
export async function deleteOwnPhoto(db: DbTx, prestataireId: number, photoId: number) {
  const [row] = await db
    .delete(galleryPhotos)
    .where(and(eq(galleryPhotos.id, photoId), eq(galleryPhotos.prestataireId, prestataireId)))
    .returning();
  return row;
}
