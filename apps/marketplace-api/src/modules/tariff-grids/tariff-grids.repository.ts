import { and, asc, count, eq, isNull, or, sql, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { tariffGrids, type TariffGrid, type VehicleCategory } from '../../db/schema/index.js';

export async function listGrids(
  db: DbTx,
  filters: { vehicleCategory?: VehicleCategory; regionCode?: string; active?: boolean },
  limit: number,
  offset: number,
) {
  const conditions: SQL[] = [];
  if (filters.vehicleCategory) conditions.push(eq(tariffGrids.vehicleCategory, filters.vehicleCategory));
  if (filters.regionCode) conditions.push(eq(tariffGrids.regionCode, filters.regionCode));
  if (filters.active !== undefined) conditions.push(eq(tariffGrids.active, filters.active));
  const where = conditions.length ? and(...conditions) : undefined;
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(tariffGrids)
      .where(where)
      .orderBy(asc(tariffGrids.vehicleCategory), sql`${tariffGrids.regionCode} nulls first`, asc(tariffGrids.id))
      .limit(limit)
      .offset(offset),
    db.select({ n: count() }).from(tariffGrids).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}

export async function findGrid(db: DbTx, id: number) {
  const [row] = await db.select().from(tariffGrids).where(eq(tariffGrids.id, id)).limit(1);
  return row;
}

export async function insertGrid(db: DbTx, values: typeof tariffGrids.$inferInsert): Promise<TariffGrid> {
  const [row] = await db.insert(tariffGrids).values(values).returning();
  return row!;
}

export async function updateGrid(db: DbTx, id: number, values: Partial<typeof tariffGrids.$inferInsert>) {
  const [row] = await db
    .update(tariffGrids)
    .set({ ...values, updatedAt: sql`now()` })
    .where(eq(tariffGrids.id, id))
    .returning();
  return row;
}

export async function deleteGrid(db: DbTx, id: number) {
  const [row] = await db.delete(tariffGrids).where(eq(tariffGrids.id, id)).returning();
  return row;
}

/** The active rate for a category in a region, else the category's national rate (region first). */
export async function applicableGrid(db: DbTx, vehicleCategory: string, regionCode: string | null) {
  const [row] = await db
    .select()
    .from(tariffGrids)
    .where(
      and(
        eq(tariffGrids.vehicleCategory, vehicleCategory as VehicleCategory),
        eq(tariffGrids.active, true),
        regionCode ? or(eq(tariffGrids.regionCode, regionCode), isNull(tariffGrids.regionCode)) : isNull(tariffGrids.regionCode),
      ),
    )
    .orderBy(sql`${tariffGrids.regionCode} nulls last`)
    .limit(1);
  return row;
}
