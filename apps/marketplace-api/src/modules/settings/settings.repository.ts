import { sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { platformSettings } from '../../db/schema/index.js';

export async function readSettings(db: DbTx): Promise<{ key: string; value: unknown }[]> {
  return db.select({ key: platformSettings.key, value: platformSettings.value }).from(platformSettings);
}

export async function writeSettings(db: DbTx, values: Record<string, unknown>, updatedBy: number | null): Promise<void> {
  const rows = Object.entries(values).map(([key, value]) => ({ key, value, updatedBy }));
  if (rows.length === 0) return;
  await db
    .insert(platformSettings)
    .values(rows)
    .onConflictDoUpdate({
      target: platformSettings.key,
      set: { value: sql`excluded.value`, updatedBy: sql`excluded.updated_by`, updatedAt: sql`now()` },
    });
}
