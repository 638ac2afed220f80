import { and, desc, eq, isNull, lt, or, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { ingestKeys } from '../../db/schema/index.js';

export async function insertKey(
  db: DbTx,
  values: { projectId: number; name: string; prefix: string; keyHash: string; createdBy: number },
) {
  const [key] = await db.insert(ingestKeys).values(values).returning();
  if (!key) throw new Error('insert returned no ingest key');
  return key;
}

export function listKeys(db: DbTx, projectId: number) {
  return db.select().from(ingestKeys).where(eq(ingestKeys.projectId, projectId)).orderBy(desc(ingestKeys.id));
}

export async function revokeKey(db: DbTx, projectId: number, keyId: number) {
  const [key] = await db
    .update(ingestKeys)
    .set({ revokedAt: sql`coalesce(${ingestKeys.revokedAt}, now())` })
    .where(and(eq(ingestKeys.id, keyId), eq(ingestKeys.projectId, projectId)))
    .returning();
  return key;
}

export async function findActiveByHash(db: DbTx, keyHash: string) {
  const [key] = await db
    .select({ id: ingestKeys.id, projectId: ingestKeys.projectId, lastUsedAt: ingestKeys.lastUsedAt })
    .from(ingestKeys)
    .where(and(eq(ingestKeys.keyHash, keyHash), isNull(ingestKeys.revokedAt)))
    .limit(1);
  return key;
}

/** At most one write a minute per key, however busy the pipeline. */
export async function touchKey(db: DbTx, keyId: number) {
  await db
    .update(ingestKeys)
    .set({ lastUsedAt: sql`now()` })
    .where(
      and(
        eq(ingestKeys.id, keyId),
        or(isNull(ingestKeys.lastUsedAt), lt(ingestKeys.lastUsedAt, sql`now() - interval '60 seconds'`)),
      ),
    );
}
