import { and, desc, eq } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { analyses } from '../../db/schema/index.js';

export async function insertAnalysis(db: DbTx, values: typeof analyses.$inferInsert) {
  const [row] = await db.insert(analyses).values(values).returning();
  if (!row) throw new Error('insert returned no analysis');
  return row;
}

export async function latestAnalysis(db: DbTx, projectId: number) {
  const [row] = await db
    .select()
    .from(analyses)
    .where(and(eq(analyses.projectId, projectId)))
    .orderBy(desc(analyses.createdAt), desc(analyses.id))
    .limit(1);
  return row;
}
