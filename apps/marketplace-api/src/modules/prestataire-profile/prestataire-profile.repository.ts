import { eq, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { cities, prestataireProfiles, type PrestataireProfile } from '../../db/schema/index.js';

/** The profile row, locked for the rest of the transaction. */
export async function lockProfile(db: DbTx, userId: number) {
  const [profile] = await db.select().from(prestataireProfiles).where(eq(prestataireProfiles.userId, userId)).for('update');
  return profile;
}

export async function updateProfile(db: DbTx, userId: number, values: Partial<PrestataireProfile>) {
  const [row] = await db
    .update(prestataireProfiles)
    .set({ ...values, updatedAt: sql`now()` })
    .where(eq(prestataireProfiles.userId, userId))
    .returning();
  return row;
}

export async function findCity(db: DbTx, id: number) {
  const [city] = await db
    .select({ id: cities.id, name: cities.name, postalCodes: cities.postalCodes, latitude: cities.latitude, longitude: cities.longitude })
    .from(cities)
    .where(eq(cities.id, id))
    .limit(1);
  return city;
}
