import { and, desc, eq, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { contentVersions, type ContentVersion, type Lang } from '../../db/schema/index.js';

const of = (key: string, lang: Lang) => and(eq(contentVersions.key, key), eq(contentVersions.lang, lang));

/** The highest version of an entry in a language. */
export async function latestVersion(db: DbTx, key: string, lang: Lang): Promise<ContentVersion | undefined> {
  const [row] = await db.select().from(contentVersions).where(of(key, lang)).orderBy(desc(contentVersions.version)).limit(1);
  return row;
}

export async function findVersion(db: DbTx, key: string, lang: Lang, version: number): Promise<ContentVersion | undefined> {
  const [row] = await db
    .select()
    .from(contentVersions)
    .where(and(of(key, lang), eq(contentVersions.version, version)))
    .limit(1);
  return row;
}

/** Every version of an entry in a language, newest first: what an editor sees of its history. */
export async function listVersions(db: DbTx, key: string, lang: Lang) {
  return db
    .select({ version: contentVersions.version, createdAt: contentVersions.createdAt, createdBy: contentVersions.createdBy })
    .from(contentVersions)
    .where(of(key, lang))
    .orderBy(desc(contentVersions.version));
}

/**
 * Adds the next version of an entry in a language. Two editors saving at once would both read the
 * same last version: a transaction-scoped lock on the key and language makes the second wait for
 * the first to commit, then number after it (the unique index stays the last guard).
 */
export async function insertNextVersion(
  tx: DbTx,
  values: { key: string; lang: Lang; title: string; body: string; createdBy: number },
): Promise<ContentVersion> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext('content_versions'), hashtext(${`${values.key}:${values.lang}`}))`);
  const [last] = await tx
    .select({ version: sql<number>`coalesce(max(${contentVersions.version}), 0)`.mapWith(Number) })
    .from(contentVersions)
    .where(of(values.key, values.lang));
  const [row] = await tx
    .insert(contentVersions)
    .values({ ...values, version: (last?.version ?? 0) + 1 })
    .returning();
  return row!;
}
