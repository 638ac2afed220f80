import { and, count, desc, eq, inArray } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { documents, type Document } from '../../db/schema/index.js';

/** A user's documents, newest first (id breaks ties within one instant). */
export async function listUserDocuments(db: DbTx, userId: number, limit = 500): Promise<Document[]> {
  return db.select().from(documents).where(eq(documents.userId, userId)).orderBy(desc(documents.createdAt), desc(documents.id)).limit(limit);
}

export async function countUserDocuments(db: DbTx, userId: number): Promise<number> {
  const [row] = await db.select({ n: count() }).from(documents).where(eq(documents.userId, userId));
  return row?.n ?? 0;
}

export async function findDocument(db: DbTx, id: number) {
  const [row] = await db.select().from(documents).where(eq(documents.id, id)).limit(1);
  return row;
}

/** The user's document; someone else's is not found. */
export async function findUserDocument(db: DbTx, userId: number, id: number) {
  const [row] = await db
    .select()
    .from(documents)
    .where(and(eq(documents.id, id), eq(documents.userId, userId)))
    .limit(1);
  return row;
}

export async function insertDocument(db: DbTx, values: typeof documents.$inferInsert): Promise<Document> {
  const [row] = await db.insert(documents).values(values).returning();
  if (!row) throw new Error('insert returned no document');
  return row;
}

export async function deleteUserDocument(db: DbTx, userId: number, id: number) {
  const [row] = await db
    .delete(documents)
    .where(and(eq(documents.id, id), eq(documents.userId, userId)))
    .returning();
  return row;
}

/** Documents counts per user, for queue listings. */
export async function countDocumentsByUser(db: DbTx, userIds: number[]): Promise<Map<number, number>> {
  if (userIds.length === 0) return new Map();
  const rows = await db
    .select({ userId: documents.userId, n: count() })
    .from(documents)
    .where(inArray(documents.userId, userIds))
    .groupBy(documents.userId);
  return new Map(rows.map((r) => [r.userId, r.n]));
}
