import { and, count, desc, eq, getTableColumns, isNull, sql } from 'drizzle-orm';
import { claimedWrite, pageWithTotal, preparedOnce, totalOfList } from '@repo/db';
import type { DbTx } from '../../db/index.js';
import { vehicles, type Vehicle } from '../../db/schema/index.js';

type VehicleValues = Partial<Omit<typeof vehicles.$inferInsert, 'id' | 'ownerId' | 'createdAt'>>;

const live = (ownerId: number) => and(eq(vehicles.ownerId, ownerId), isNull(vehicles.deletedAt));

// The garage list is on the common path: prepared once per database (see preparedOnce), the page
// and its total in one statement (an owner's garage is a handful of rows: see totalOfList).
const ownVehiclesPage = preparedOnce((db) =>
  db
    .select({ row: getTableColumns(vehicles), total: totalOfList() })
    .from(vehicles)
    .where(and(eq(vehicles.ownerId, sql.placeholder('ownerId')), isNull(vehicles.deletedAt)))
    .orderBy(desc(vehicles.createdAt), desc(vehicles.id))
    .limit(sql.placeholder('limit'))
    .offset(sql.placeholder('offset'))
    .prepare('own_vehicles_page'),
);
const ownVehicleCount = preparedOnce((db) =>
  db
    .select({ n: count() })
    .from(vehicles)
    .where(and(eq(vehicles.ownerId, sql.placeholder('ownerId')), isNull(vehicles.deletedAt)))
    .prepare('own_vehicle_count'),
);

export async function listVehicles(db: DbTx, ownerId: number, limit: number, offset: number) {
  return pageWithTotal(
    await ownVehiclesPage(db).execute({ ownerId, limit, offset }),
    offset,
    async () => {
      const [counted] = await ownVehicleCount(db).execute({ ownerId });
      return counted?.n ?? 0;
    },
    ({ row }) => row,
  );
}

/** The owner's live vehicle; someone else's, or a deleted one, is not found. */
export async function findOwnVehicle(db: DbTx, ownerId: number, id: number) {
  const [row] = await db.select().from(vehicles).where(and(eq(vehicles.id, id), live(ownerId))).limit(1);
  return row;
}

/** One statement; as the work of an Idempotency-Key, in a transaction that marks its claim (claimedWrite). */
export async function insertVehicle(db: DbTx, values: typeof vehicles.$inferInsert): Promise<Vehicle> {
  const [row] = await claimedWrite(db, (tx) => tx.insert(vehicles).values(values).returning());
  return row!;
}

export async function updateVehicle(db: DbTx, ownerId: number, id: number, values: VehicleValues) {
  const [row] = await db
    .update(vehicles)
    .set({ ...values, updatedAt: sql`now()` })
    .where(and(eq(vehicles.id, id), live(ownerId)))
    .returning();
  return row;
}

export async function softDeleteVehicle(db: DbTx, ownerId: number, id: number) {
  const rows = await db
    .update(vehicles)
    .set({ deletedAt: sql`now()`, updatedAt: sql`now()` })
    .where(and(eq(vehicles.id, id), live(ownerId)))
    .returning({ id: vehicles.id });
  return rows.length === 1;
}

/** Whether another live vehicle of the owner has this VIN or plate (the unique indexes' question, asked first for a clear error). */
export async function findDuplicate(db: DbTx, ownerId: number, field: 'vin' | 'plate', value: string, exceptId?: number) {
  const column = field === 'vin' ? vehicles.vin : vehicles.plate;
  const [row] = await db
    .select({ id: vehicles.id })
    .from(vehicles)
    .where(and(live(ownerId), eq(column, value), exceptId ? sql`${vehicles.id} <> ${exceptId}` : undefined))
    .limit(1);
  return row;
}
